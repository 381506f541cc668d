import type { AppContext } from '../context.js';

/**
 * What the status page shows comes from small read functions each area provides: the terminals
 * area says which terminals are available, the webhooks area which deliveries fail, and so on. An
 * area registers them with `provideStatus(ctx, {...})` when its module is set up (in its `api`,
 * `root` or `workers` hook). A panel whose area has provided nothing shows "not configured", never
 * a made-up number.
 */
export interface TerminalStatus {
  id: string;
  name: string | null;
  account_id: string;
  available: boolean;
  /** e.g. `websocket`, `serial /dev/ttyUSB0` */
  link: string | null;
  last_seen_at: string | null;
}

export interface CommandInFlight {
  id: string;
  /** The till's reference for the sale, and its description: what the page shows instead of the id. */
  external_id: string | null;
  description: string | null;
  terminal_id: string;
  /** The terminal's name (what the page shows; the id stays in the cell's title). */
  terminal_name: string | null;
  state: string;
  amount_in_cents: number;
  currency: string;
  created_at: string;
}

export interface SalesTotal {
  /** `cash`, `card`, ... */
  method: string;
  currency: string;
  count: number;
  amount_in_cents: number;
}

export interface FailingDelivery {
  delivery_id: string;
  event_type: string;
  attempts: number;
  last_response_code: number | null;
  last_error: string | null;
  updated_at: string;
}

export interface FailingEndpoint {
  endpoint_id: string;
  url: string;
  account_id: string;
  /** Since when every automatic attempt has failed, once that is an hour or more (webhooks.failing_notice_ms). */
  failing_since?: string | null;
  /** Why it is disabled, if it is (e.g. disabled automatically after days of failing). */
  disabled_reason?: string | null;
  /** Where its one "resend the failed" button replays from: early enough to cover its failing streak and every failed delivery. */
  replay_since?: string | null;
  /** Deliveries given up (`failed`), which the button resends. */
  failed: number;
  /** Deliveries that failed and wait for their next automatic attempt (they keep their schedule). */
  retrying: number;
  /** The latest of them. */
  last: FailingDelivery | null;
  /** The endpoint answers again (a later delivery succeeded): its old failures are shown greyed, not red. */
  recovered: boolean;
}

export interface SyncState {
  connected: boolean;
  last_success_at: string | null;
  records_waiting: number;
  oldest_waiting_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  /** The central's certificate fingerprint the link trusts alone (null: none pinned). */
  central_pinned?: string | null;
}

/** A store box as its central sees it: `silent` (no push for sync.store_silent_ms), `attention` (records parked), `new` (never pushed yet), `ok`. */
export type StoreState = 'silent' | 'attention' | 'new' | 'ok';

export interface CentralStore {
  store_id: string;
  account_id: string;
  live_mode: boolean;
  state: StoreState;
  /** When it joined (its first push or bootstrap). */
  created_at: string;
  /** How long it has been silent: since its last push, or since it joined when it never pushed. */
  silent_ms: number;
  /** The highest seq received (what the store's cursor follows) and how far the projector applied. */
  received_seq: number;
  applied_seq: number;
  last_push_at: string | null;
  /** Received but not applied: held (no applier yet) and parked (its applier failed; an operator decides). */
  held: number;
  parked: number;
  rejected: number;
  /** How late its newest record arrived: received at the central minus made at the store. */
  lag_ms: number | null;
  /** What the box said it still held after its last push (records, the oldest's time); null: never said. */
  box_waiting: number | null;
  box_waiting_since: string | null;
  /** The store's latest reconciliation report (sent only when its totals differ from the central's). */
  reconciliation: { reported_at: string | null; day: string | null };
}

export interface StoreQuery {
  state?: StoreState;
  /** Part of a store id or of its account's name (case-insensitive). */
  text?: string;
  /** 1-based. */
  page?: number;
  per_page?: number;
}

/** One page of a central's stores, with the counts of all of them. */
export interface StoreListing {
  total: number;
  counts: Record<StoreState, number>;
  /** How many match the filter (the pages split these). */
  matched: number;
  page: number;
  pages: number;
  per_page: number;
  stores: CentralStore[];
}

export interface StatusSources {
  terminals?(): TerminalStatus[];
  commandsInFlight?(): CommandInFlight[];
  /** Sales whose time falls in [fromIso, untilIso), summed by payment method and currency: live ones, or sandbox ones with `liveMode` false. */
  salesBetween?(fromIso: string, untilIso: string, liveMode?: boolean): SalesTotal[];
  failingWebhooks?(): FailingEndpoint[];
  /** The webhooks area's manual retry: sends the delivery again now. */
  resendDelivery?(deliveryId: string): Promise<{ ok: boolean; message: string }>;
  /** The webhooks area's bulk replay of an endpoint's failed deliveries made since `sinceIso`. */
  replayFailures?(endpointId: string, sinceIso: string): Promise<{ ok: boolean; message: string }>;
  sync?(): SyncState;
  /** A central's stores, counted by state, filtered, sorted by silence and paged: how far each pushed, what waits, how late records arrive, what reconciliation reported. */
  centralStores?(query: StoreQuery): StoreListing;
  /** Sync problems that need a manager now, on a store or a central (one line each, with what to do). */
  syncAlerts?(): Array<{ code: string; message: string; fix: string }>;
}

const byContext = new WeakMap<object, StatusSources>();

/** Called by an area to add its read functions to the daemon's status page. */
export function provideStatus(ctx: AppContext, part: StatusSources): void {
  byContext.set(ctx, { ...statusSources(ctx), ...part });
}

export function statusSources(ctx: AppContext): StatusSources {
  return byContext.get(ctx) ?? {};
}
