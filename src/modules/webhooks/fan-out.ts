import { isoTime } from '../../clock.js';
import type { EndpointRow, WebhooksStore } from './store.js';
import type { WriteOp } from './writer.js';

/** The next fan-out batch: the delivery rows of up to `limit` events past the cursor, and the cursor's move. */
export interface FanOutBatch {
  /** Events read (0: none past the cursor). */
  events: number;
  ops: WriteOp[];
}

/**
 * Plans one fan-out batch from the daemon's connection (reads only): one delivery row per event and
 * active endpoint of its account and environment (and of its platform, for a connected account's
 * event), for endpoints made before the event whose `filter_types`, if any, name its type. The writer commits the rows and the cursor together;
 * a row whose endpoint was deleted or disabled meanwhile is not made (the insert checks), nor one
 * for an event the cursor has passed, so a batch planned twice is written once.
 */
export function planFanOut(store: WebhooksStore, parentOf: (accountId: string) => string | null, nowMs: number, limit: number): FanOutBatch {
  return planFanOutOf(store, store.eventsAfter(store.cursor(), limit), parentOf, nowMs);
}

/** The same for the given events (the next ones past the cursor, in seq order). */
export function planFanOutOf(
  store: WebhooksStore,
  events: ReturnType<WebhooksStore['eventsAfter']>,
  parentOf: (accountId: string) => string | null,
  nowMs: number,
): FanOutBatch {
  if (events.length === 0) return { events: 0, ops: [] };
  const byScope = new Map<string, EndpointRow[]>();
  // `filter_types` (Svix's name): an endpoint with a list receives only those types.
  const only = new Map<string, Set<string>>();
  const fifo = new Set<string>();
  for (const ep of store.activeEndpoints()) {
    if (ep.fifo) fifo.add(ep.id);
    if (ep.filter_types !== null) only.set(ep.id, new Set(JSON.parse(ep.filter_types) as string[]));
    const k = `${ep.account_id}:${ep.live_mode}`;
    byScope.set(k, [...(byScope.get(k) ?? []), ep]);
  }
  // [events.seq, endpoint id] per row, in row order: one statement writes them (store.ts).
  const rows: Array<[number, string]> = [];
  for (const ev of events) {
    if (byScope.size === 0) break;
    const own = byScope.get(`${ev.account_id}:${ev.live_mode}`);
    const parent = parentOf(ev.account_id);
    const platform = parent ? byScope.get(`${parent}:${ev.live_mode}`) : undefined;
    for (const ep of own && platform ? [...own, ...platform] : (own ?? platform ?? [])) {
      if (ep.from_seq >= ev.seq) continue;
      if (only.size > 0 && only.get(ep.id)?.has(ev.type) === false) continue;
      rows.push([ev.seq, ep.id]);
    }
  }
  const ops: WriteOp[] = [];
  if (rows.length > 0) ops.push(['insertDeliveries', { rows: JSON.stringify(rows), next_attempt_ms: nowMs, created_at: isoTime(nowMs) }]);
  // A first-in-first-out endpoint's rows are made parked: its oldest is given a schedule if it has
  // no head, in the same transaction (so a crash leaves no endpoint with parked rows and no head).
  if (fifo.size > 0) {
    const touched = new Set(rows.map(([, id]) => id));
    for (const id of fifo) if (touched.has(id)) ops.push(['promoteNext', { id, now_ms: nowMs }]);
  }
  ops.push(['advanceCursor', { seq: events[events.length - 1].seq }]);
  return { events: events.length, ops };
}
