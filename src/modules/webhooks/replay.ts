import type { Db } from '../../db/database.js';
import { tx } from '../../db/database.js';
import { isoTime, type Clock } from '../../clock.js';
import { newId } from '../../ids.js';
import type { EndpointRow, ReplayFilter, ReplayRow, WebhooksStore, DeliveryRow } from './store.js';

export interface ReplayView {
  id: string;
  endpoint_id: string;
  /** Deliveries made by the replay (one per event). */
  total: number;
  pending: number;
  succeeded: number;
  failed: number;
  canceled: number;
  filters: ReplayFilter & { missed?: boolean };
  created_at: string;
}

export function replayView(store: WebhooksStore, r: ReplayRow): ReplayView {
  const counts = store.replayCounts(r);
  return { id: r.id, endpoint_id: r.endpoint_id, total: r.total, ...counts, filters: JSON.parse(r.filters), created_at: r.created_at };
}

/** Events per slice of a bulk replay: one slice's transaction holds the loop and the write lock ~10 ms. */
export const REPLAY_SLICE = 1_000;

/**
 * A bulk replay (docs/webhooks.md): every event among the endpoint's deliveries that match the
 * filter gets a new pending delivery, due now, with the same event and so the same `webhook-id` (a
 * receiver that deduplicates sees it once). Events whose delivery is still pending are skipped
 * (that one is sent anyway). Made in slices of `REPLAY_SLICE` events in events order, each its own
 * committed transaction, yielding between them, so a replay of 100,000 events never holds the
 * event loop (or, from `posd webhooks replay` beside a running daemon, the write lock) for more
 * than one slice; the worker starts sending after the first slice (`onSlice`). Resolves once every
 * slice is on disk. Used by the API and by `posd webhooks replay` (the daemon finds the rows at its
 * next look at the table).
 */
export async function replayDeliveries(
  db: Db,
  store: WebhooksStore,
  clock: Clock,
  endpoint: EndpointRow,
  filter: ReplayFilter,
  opts: { onSlice?: () => void | Promise<void>; slice?: number } = {},
): Promise<ReplayView> {
  const nowMs = clock.now();
  const at = { nowMs, now: isoTime(nowMs) };
  const row = tx(db, () => record(store, endpoint, filter, at.now));
  let afterEventSeq = -1;
  for (;;) {
    const made = tx(db, () => {
      const m = store.replaySlice(endpoint, filter, at, { replayId: row.id, afterEventSeq, limit: opts.slice ?? REPLAY_SLICE });
      if (m.total > 0) {
        store.extendReplay(row.id, m);
        // A first-in-first-out endpoint's replayed rows wait behind its pending ones (parked).
        if (endpoint.fifo) store.promoteNext(endpoint.id, nowMs);
      }
      return m;
    });
    if (made.total > 0) await opts.onSlice?.();
    if (made.lastEventSeq === null || made.total < (opts.slice ?? REPLAY_SLICE)) break;
    afterEventSeq = made.lastEventSeq;
    await new Promise((r) => setImmediate(r));
  }
  return replayView(store, store.replayById(row.id)!);
}

/**
 * What an endpoint missed while it was disabled: the deliveries its disabling canceled, sent again,
 * and one delivery for each event its scope had while it was disabled (events the fan-out passed
 * then), with its filters. Called in the transaction that enables it again, before the disabled
 * marks are cleared (bounded by how long the endpoint was disabled, so made in one statement each).
 */
export function replayMissed(
  store: WebhooksStore,
  clock: Clock,
  endpoint: EndpointRow,
  parentOf: (accountId: string) => string | null,
): ReplayView {
  const nowMs = clock.now();
  const at = { nowMs, now: isoTime(nowMs) };
  const disabledAt = endpoint.disabled_at_ms === null ? endpoint.updated_at : isoTime(endpoint.disabled_at_ms);
  const filter: ReplayFilter = { since: isoTime(0), until: at.now, event_types: null, statuses: ['canceled'] };
  const row = record(store, endpoint, { ...filter, missed: true }, at.now);
  // Only what the disabling canceled: canceled rows changed since then.
  const canceled = store.replaySlice(endpoint, filter, at, { replayId: row.id, afterEventSeq: -1, limit: -1, changedSince: disabledAt });
  store.extendReplay(row.id, canceled);
  const types = endpoint.filter_types === null ? null : new Set(JSON.parse(endpoint.filter_types) as string[]);
  const rows: Array<[number, string]> = [];
  if (endpoint.disabled_seq !== null) {
    for (const ev of store.eventsBetween(endpoint.disabled_seq, store.cursor(), endpoint.live_mode)) {
      if (ev.seq <= endpoint.from_seq || (types && !types.has(ev.type))) continue;
      if (ev.account_id === endpoint.account_id || parentOf(ev.account_id) === endpoint.account_id) rows.push([ev.seq, endpoint.id]);
    }
  }
  store.extendReplay(row.id, store.insertCatchUp(rows, at, row.id));
  if (endpoint.fifo) store.promoteNext(endpoint.id, nowMs);
  return replayView(store, store.replayById(row.id)!);
}

/** The replay's row, before its deliveries are made (their counts are found by its id). */
function record(store: WebhooksStore, endpoint: EndpointRow, filter: ReplayFilter & { missed?: boolean }, now: string): ReplayRow {
  const row: ReplayRow = {
    id: newId('whr'),
    endpoint_id: endpoint.id,
    first_seq: null,
    last_seq: null,
    total: 0,
    filters: JSON.stringify(filter),
    created_at: now,
  };
  store.insertReplay(row);
  return row;
}

export const DELIVERY_STATUSES: ReadonlyArray<DeliveryRow['status']> = ['pending', 'succeeded', 'failed', 'canceled'];
