import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signatures of spec 6.5 (the Standard Webhooks scheme): HMAC-SHA256, keyed with the base64-decoded
 * part of the secret after `whsec_`, over `<webhook-id>.<webhook-timestamp>.<raw body>`, sent as
 * `v1,<base64>`. Made at each attempt, never stored.
 */

export const SECRET_PREFIX = 'whsec_';

/** `whsec_` + base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

export function secretKey(secret: string): Buffer {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  if (key.length === 0) throw new Error('empty signing secret');
  return key;
}

export function sign(secret: string | Buffer, id: string, timestampSeconds: number, body: string): string {
  const key = typeof secret === 'string' ? secretKey(secret) : secret;
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * What goes on the wire: the Standard Webhooks names and the same values under the `svix-` names,
 * because the hosted service delivers through Svix and its clients (the official shop plugin among
 * them) read only `svix-id`, `svix-timestamp` and `svix-signature`.
 */
export interface DeliveryHeaders extends SignedHeaders {
  'svix-id': string;
  'svix-timestamp': string;
  'svix-signature': string;
}

export function deliveryHeaders(signed: SignedHeaders): DeliveryHeaders {
  return {
    ...signed,
    'svix-id': signed['webhook-id'],
    'svix-timestamp': signed['webhook-timestamp'],
    'svix-signature': signed['webhook-signature'],
  };
}

/**
 * The headers of one attempt. With `previous` (a rotation's overlap), the signature by each secret,
 * space-separated in the one header, as Standard Webhooks allows: a receiver holding either
 * secret verifies it.
 */
export function signedHeaders(secret: string | Buffer, id: string, timestampSeconds: number, body: string, previous?: string | Buffer): SignedHeaders {
  const signature = sign(secret, id, timestampSeconds, body);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': previous === undefined ? signature : `${signature} ${sign(previous, id, timestampSeconds, body)}`,
  };
}

/** The receiver's side of 6.5, for our own tools and docs: any `v1,` entry matching in constant time. */
export function verify(secret: string, headers: SignedHeaders, body: string): boolean {
  const expected = Buffer.from(sign(secret, headers['webhook-id'], Number(headers['webhook-timestamp']), body).slice(3));
  return headers['webhook-signature'].split(' ').some((entry) => {
    const [version, sig] = entry.split(',');
    if (version !== 'v1' || !sig) return false;
    const given = Buffer.from(sig);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
