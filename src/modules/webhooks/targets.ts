import { isIP } from 'node:net';
import type { AppContext } from '../../context.js';
import { secretKey } from '../../system/standard-webhooks.js';
import type { SecretBox } from '../../system/secret-box.js';
import { hostOf, type UrlGuard } from '../../system/url-guard.js';
import type { GateSettings } from './gates.js';
import type { WebhooksStore } from './store.js';

/** An endpoint's URL parsed once, whether it names a refused literal address, and its signing key. */
export interface Target {
  origin: string;
  path: string;
  refused: string | null;
  key: Buffer;
  /** The key a rotation replaced, signing beside `key` until `previousUntil` (Unix ms). */
  previous: Buffer | null;
  previousUntil: number;
  /** The endpoint's throttle and cap (gates.ts); null: none. */
  gate: GateSettings | null;
  /** First-in-first-out delivery: a success of its makes the next in its order due. */
  fifo: boolean;
}

/** The dispatcher's targets by endpoint id: its URL changes only by a PATCH, its secret by a rotation (both `forget`). */
export class Targets {
  private readonly byId = new Map<string, Target>();

  constructor(
    private readonly ctx: AppContext,
    private readonly store: WebhooksStore,
    private readonly guard: UrlGuard,
    private readonly box: SecretBox,
  ) {}

  /** The cached target only (undefined when not made yet). */
  cached(endpointId: string): Target | undefined {
    return this.byId.get(endpointId);
  }

  forget(endpointId: string): void {
    this.byId.delete(endpointId);
  }

  /** The endpoint's parsed URL and key, cached (undefined if the endpoint is gone); throws if its secret does not open. */
  of(endpointId: string): Target | undefined {
    let t = this.byId.get(endpointId);
    if (t) return t;
    const ep = this.store.endpoint(endpointId);
    if (!ep) return undefined;
    const u = new URL(ep.url);
    const host = hostOf(u);
    // A literal address never reaches the socket's lookup, so it is checked here.
    const refused = isIP(host) && !this.guard.addressAllowed(host) ? `address_refused: ${host} is a private, local or metadata address` : null;
    t = {
      origin: u.origin,
      path: u.search ? `${u.pathname}${u.search}` : u.pathname,
      refused,
      key: secretKey(this.box.open(ep.secret)),
      previous: ep.previous_secret === null ? null : secretKey(this.box.open(ep.previous_secret)),
      previousUntil: ep.previous_secret_expires_ms ?? 0,
      gate: this.gateOf(ep.rate_limit, ep.max_in_flight),
      fifo: ep.fifo === 1,
    };
    if (this.byId.size >= 1000) this.byId.clear();
    this.byId.set(endpointId, t);
    return t;
  }

  /** The endpoint's own settings, or the default cap where it names none; null: no gate. */
  private gateOf(rateLimit: number | null, maxInFlight: number | null): GateSettings | null {
    const cap = maxInFlight ?? (this.ctx.config.webhooks.endpoint_max_in_flight || null);
    return rateLimit === null && cap === null ? null : { rateLimit, maxInFlight: cap };
  }
}
