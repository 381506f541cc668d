import type { Db } from '../../db/database.js';
import { groupCommit } from '../../db/group-commit.js';
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

/** Deliveries read per slice of a bulk replay: one slice's transaction holds the loop ~10 ms. */
export const REPLAY_SLICE = 2_000;

/** Where a replay's scan of the endpoint's deliveries is, and what it has seen. */
interface ReplayScan {
  afterSeq: number;
  /** The highest delivery seq when the replay began: its own rows, made after, are not read. */
  uptoSeq: number;
  /** Events given a delivery by this replay (each once). */
  made: Set<number>;
  /** Events with a pending delivery when the replay began: skipped, that one is sent anyway. */
  pending: Set<number>;
}

/**
 * The next slice of a replay: reads up to `limit` of the endpoint's deliveries after the scan's
 * position (an index range), keeps those the filter matches whose event this replay has not made
 * yet, and makes their new deliveries. `done` once the scan passed the last row to read.
 */
function replaySlice(
  store: WebhooksStore,
  endpoint: EndpointRow,
  filter: ReplayFilter,
  at: { nowMs: number; now: string },
  replayId: string,
  scan: ReplayScan,
  opts: { limit: number; changedSince?: string },
): { made: { first: number | null; last: number | null; total: number }; done: boolean } {
  const rows = store.replayScan(endpoint.id, scan.afterSeq, scan.uptoSeq, opts.limit);
  const types = filter.event_types === null ? null : new Set(filter.event_types);
  const statuses = filter.statuses === null ? null : new Set(filter.statuses);
  const chosen: number[] = [];
  for (const d of rows) {
    if (d.event_seq === null || scan.made.has(d.event_seq) || scan.pending.has(d.event_seq)) continue;
    if (d.created_at < filter.since || d.created_at >= filter.until) continue;
    if (opts.changedSince !== undefined && d.updated_at < opts.changedSince) continue;
    if ((types && !types.has(d.event_type)) || (statuses && !statuses.has(d.status))) continue;
    scan.made.add(d.event_seq);
    chosen.push(d.seq);
  }
  if (rows.length > 0) scan.afterSeq = rows[rows.length - 1].seq;
  const made = store.insertReplayed(endpoint, chosen, at, replayId);
  if (made.total > 0) store.extendReplay(replayId, made);
  return { made, done: rows.length < opts.limit };
}

/**
 * A bulk replay (docs/webhooks.md): every event among the endpoint's deliveries that match the
 * filter gets a new pending delivery, due now, with the same event and so the same `webhook-id` (a
 * receiver that deduplicates sees it once). Events whose delivery is still pending are skipped
 * (that one is sent anyway). The endpoint's deliveries are read in slices of `REPLAY_SLICE` along
 * an index, each slice's new deliveries committed in its own transaction with the loop free
 * between them, so a replay of 100,000 events never holds the event loop (or, from `posd webhooks
 * replay` beside a running daemon, the write lock) for more than one slice; the worker starts
 * sending after the first (`onSlice`). Resolves once every slice is on disk. Used by the API and
 * by `posd webhooks replay` (the daemon finds the rows at its next look at the table).
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
  // Each slice joins the database's next group commit (the one pipeline of every write).
  const { row, scan } = await groupCommit(db, () => ({
    row: record(store, endpoint, filter, at.now),
    scan: { afterSeq: 0, uptoSeq: store.maxDeliverySeq(), made: new Set<number>(), pending: store.pendingEventSeqs(endpoint.id) },
  }));
  for (;;) {
    const slice = await groupCommit(db, () => {
      const r = replaySlice(store, endpoint, filter, at, row.id, scan, { limit: opts.slice ?? REPLAY_SLICE });
      // A first-in-first-out endpoint's replayed rows wait behind its pending ones (parked).
      if (r.made.total > 0 && endpoint.fifo) store.promoteNext(endpoint.id, nowMs);
      return r;
    });
    if (slice.made.total > 0) await opts.onSlice?.();
    if (slice.done) break;
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
export function replayMissed(store: WebhooksStore, clock: Clock, endpoint: EndpointRow, parentOf: (accountId: string) => string | null): ReplayView {
  const nowMs = clock.now();
  const at = { nowMs, now: isoTime(nowMs) };
  const disabledAt = endpoint.disabled_at_ms === null ? endpoint.updated_at : isoTime(endpoint.disabled_at_ms);
  const filter: ReplayFilter = { since: isoTime(0), until: at.now, event_types: null, statuses: ['canceled'] };
  const row = record(store, endpoint, { ...filter, missed: true }, at.now);
  // Only what the disabling canceled: canceled rows changed since then (bounded by how long the
  // endpoint was disabled; read in slices all the same, inside this one transaction).
  const scan: ReplayScan = { afterSeq: 0, uptoSeq: store.maxDeliverySeq(), made: new Set(), pending: store.pendingEventSeqs(endpoint.id) };
  while (!replaySlice(store, endpoint, filter, at, row.id, scan, { limit: REPLAY_SLICE, changedSince: disabledAt }).done);
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
