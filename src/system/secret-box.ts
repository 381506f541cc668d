import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { AppContext } from '../context.js';
import type { IdempotencyCodec } from '../api/idempotency.js';

/** The key file in the data folder, used when `webhooks.secrets_key` is empty. */
export function secretsKeyFile(config: Pick<Config, 'data_dir'>): string {
  return join(config.data_dir, 'webhook-secrets.key');
}

/** A short, non-secret name of a key, so a manager can tell two key files apart. */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

/** The key that seals this box's secrets and where it comes from, without making one (undefined: none yet). */
export function readSecretsKey(config: Config): { key: Buffer; source: string } | undefined {
  if (config.webhooks.secrets_key) return { key: Buffer.from(config.webhooks.secrets_key, 'base64'), source: 'the webhooks.secrets_key setting' };
  const file = secretsKeyFile(config);
  if (!existsSync(file)) return undefined;
  return { key: Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'), source: file };
}

/**
 * A secret that the key cannot open: it was sealed with another key (a database restored or copied
 * without its key file). Named as such, since the delivery otherwise fails looking like a network error.
 */
export class KeyMismatchError extends Error {
  constructor(source: string, fingerprint: string) {
    super(
      `secret_key_mismatch: ${source} (key ${fingerprint}) does not match this database: its webhook secrets were sealed with another key; ` +
        'put back the key of this database (posd restore of a complete backup brings it back), or roll the endpoint secrets',
    );
    this.name = 'KeyMismatchError';
  }
}

/**
 * The box's key. Secrets posd must reuse (webhook signing secrets, tax-invoicing credentials, stored
 * idempotent answers that carry a secret) are encrypted at rest (AES-256-GCM) so that a copy of the
 * database alone (a support bundle, a synced snapshot) does not let anyone forge deliveries or pose
 * as the store. The name of the key's setting and file predate that wider use. The key comes from
 * `webhooks.secrets_key` (base64 of 32 bytes, e.g. from `POSD_WEBHOOKS_SECRETS_KEY`) or, when that is
 * empty, from `webhook-secrets.key` in the data folder, made (mode 0600) on first use. A backup carries
 * the key sealed to the recovery key (src/system/recovery-key.ts).
 */
export class SecretBox {
  readonly fingerprint: string;

  constructor(
    private readonly key: Buffer,
    /** Where the key came from, for the mismatch message. */
    readonly source = 'the webhook secrets key',
  ) {
    if (key.length !== 32) throw new Error('webhooks.secrets_key must be base64 of 32 bytes');
    this.fingerprint = keyFingerprint(key);
  }

  static fromConfig(config: Config): SecretBox {
    const found = readSecretsKey(config);
    if (found) return new SecretBox(found.key, found.source);
    const file = secretsKeyFile(config);
    // 'wx' fails if another process made it meanwhile; then we read theirs.
    try {
      writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    chmodSync(file, 0o600);
    return new SecretBox(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'), file);
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join(':');
  }

  open(sealed: string): string {
    const [version, iv, tag, data] = sealed.split(':');
    if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      // GCM's tag check is the only failure left here: the secret was sealed with another key.
      throw new KeyMismatchError(this.source, this.fingerprint);
    }
  }
}

const boxes = new WeakMap<AppContext, SecretBox>();

/**
 * The box's key, one per daemon: seals every secret posd must keep and reuse (webhook signing
 * secrets, tax-invoicing credentials, idempotent responses that carry a secret shown once).
 */
export function secretBoxOf(ctx: AppContext): SecretBox {
  let box = boxes.get(ctx);
  if (!box) {
    box = SecretBox.fromConfig(ctx.config);
    boxes.set(ctx, box);
  }
  return box;
}

/** The codec a route names in `config.idempotencyCodec` when its answer holds a secret. */
export function sealedResponses(box: SecretBox): IdempotencyCodec {
  return { seal: (t) => box.seal(t), open: (t) => box.open(t) };
}

export interface KeyCheck {
  ok: boolean;
  detail: string;
  fix?: string;
}

/**
 * Does this box's key open the secrets its database holds? Read-only: a missing key file is reported,
 * never made (serve would make a new one that opens nothing).
 */
export function checkSecretsKey(config: Config, sealed: Array<{ id: string; secret: string }>): KeyCheck {
  const found = readSecretsKey(config);
  if (!found) {
    if (sealed.length === 0) return { ok: true, detail: 'no key yet and no endpoint secrets (made on first start)' };
    return {
      ok: false,
      detail: `${secretsKeyFile(config)} is missing but the database holds endpoint secrets: every delivery will fail`,
      fix: 'put back the key file of this database: posd restore of a complete backup brings it back',
    };
  }
  let box: SecretBox;
  try {
    box = new SecretBox(found.key, found.source);
  } catch (err) {
    return { ok: false, detail: `${found.source}: ${(err as Error).message}`, fix: 'put back the key file of this database' };
  }
  for (const row of sealed) {
    try {
      box.open(row.secret);
    } catch {
      return {
        ok: false,
        detail: `${found.source} (key ${box.fingerprint}) does not match the database: it cannot open the secret of endpoint ${row.id}`,
        fix: 'put back the key file of this database (posd restore of a complete backup), or roll every endpoint secret',
      };
    }
  }
  return { ok: true, detail: `${found.source} (key ${box.fingerprint})${sealed.length ? ' opens the endpoint secrets' : ''}` };
}
