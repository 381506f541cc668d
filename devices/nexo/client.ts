/**
 * One nexo terminal over HTTPS (Terminal API, local): POST of a secured JSON message to
 * `https://<address>:<port>/nexo`, the answer secured the same way in the response body. Sent with
 * undici (loaded at first use, as src/system/undici.ts does), not the library's `TerminalLocalAPI`,
 * which fixes the port at 8443, wants a cloud API key and sends through node:https.
 */
import { createRequire } from 'node:module';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import type { LookupFunction } from 'node:net';
import type * as Undici from 'undici';
import { NexoCryptoError, openNexo, sealNexo, type NexoKey } from './crypto.js';
import type { NexoParties } from './messages.js';

const requireHere = createRequire(import.meta.url);

export interface NexoTerminalAddress {
  address: string;
  port: number;
  poiid: string;
}

export interface NexoClientOptions extends NexoTerminalAddress {
  saleId: string;
  key: NexoKey;
  /** PEM of the CA the terminal's certificate must chain to (Adyen's terminal CA; a test CA in tests). */
  ca?: string;
  /** The outbound guard's lookup (src/system/url-guard.ts): connections go only where it admits. */
  lookup?: LookupFunction;
  connectTimeoutMs?: number;
}

/** The terminal answered with a clear (unencrypted) message: it could not open ours, or refused it. */
export class NexoRejectedError extends Error {
  constructor(
    message: string,
    readonly wrongKey: boolean,
  ) {
    super(message);
    this.name = 'NexoRejectedError';
  }
}

/**
 * A terminal's certificate names the terminal, not the address it has on the store's network
 * (Adyen's read `<model>-<serial>.<env>.terminal.adyen.com`, the POIID first): accept the usual host
 * check, or a common name that is the POIID or starts with it.
 */
export function terminalIdentityCheck(poiid: string) {
  const want = poiid.toLowerCase();
  return (host: string, cert: PeerCertificate): Error | undefined => {
    if (!checkServerIdentity(host, cert)) return undefined;
    const cn = String(cert.subject?.CN ?? '').toLowerCase();
    if (cn === want || cn.startsWith(`${want}.`)) return undefined;
    return new Error(`the terminal's certificate names ${cn || 'nobody'}, not ${poiid}`);
  };
}

export class NexoClient {
  readonly parties: NexoParties;
  private readonly agent: Undici.Agent;
  private readonly url: string;
  private readonly undici: typeof Undici;

  constructor(private readonly opts: NexoClientOptions) {
    this.undici = requireHere('undici') as typeof Undici;
    this.parties = { saleId: opts.saleId, poiid: opts.poiid };
    const host = opts.address.includes(':') ? `[${opts.address}]` : opts.address;
    this.url = `https://${host}:${opts.port}/nexo`;
    this.agent = new this.undici.Agent({
      connect: {
        ...(opts.lookup ? { lookup: opts.lookup } : {}),
        ...(opts.ca ? { ca: opts.ca } : {}),
        timeout: opts.connectTimeoutMs ?? 5_000,
        checkServerIdentity: terminalIdentityCheck(opts.poiid),
      },
      // A payment request, an abort and a status request may be in flight at once.
      connections: 4,
      pipelining: 0,
    });
  }

  /**
   * Sends one clear request, secured under the key; resolves with the clear answer, or null for an
   * empty one (an AbortRequest's). Rejects with NexoCryptoError / NexoRejectedError for a key
   * problem, anything else for a lost answer.
   */
  async post(clear: { SaleToPOIRequest: { MessageHeader: object } }, timeoutMs: number, signal?: AbortSignal): Promise<Record<string, unknown> | null> {
    const body = JSON.stringify(sealNexo(clear, this.opts.key));
    const res = await this.undici.request(this.url, {
      method: 'POST',
      dispatcher: this.agent,
      headers: { 'content-type': 'application/json' },
      body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal,
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`terminal answered HTTP ${res.statusCode}`);
    if (text.trim() === '') return null;
    const parsed = JSON.parse(text) as Record<string, Record<string, unknown>>;
    const outer = parsed.SaleToPOIResponse ?? parsed.SaleToPOIRequest;
    if (outer && !('NexoBlob' in outer)) {
      // Adyen's terminals answer a message they cannot open with a clear EventNotification (Reject).
      const details = JSON.stringify(outer).slice(0, 300);
      throw new NexoRejectedError(`terminal answered in clear: ${details}`, /crypto|hmac|key/i.test(details));
    }
    return openNexo(parsed, this.opts.key);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

export function isKeyProblem(err: unknown): boolean {
  return (err instanceof NexoCryptoError && err.wrongKey) || (err instanceof NexoRejectedError && err.wrongKey);
}
