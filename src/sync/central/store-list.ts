import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import type { CentralStore, StoreListing, StoreQuery, StoreState } from '../../system/status-sources.js';
import { centralSide, type StoreRow } from './sync-store.js';

/** Reconciliation reports older than this are not looked for (the read stays short). */
const REPORT_WINDOW_MS = 14 * 86_400_000;
/** A page of the stores panel, and of `posd stores list` unless told otherwise. */
export const STORES_PER_PAGE = 50;
export const STORE_STATES: StoreState[] = ['silent', 'attention', 'new', 'ok'];

/** How long a store has been silent: since its last push, or since it joined when it never pushed. */
export function silentFor(row: Pick<StoreRow, 'last_push_at' | 'created_at'>, nowMs: number): number {
  return Math.max(0, nowMs - Date.parse(row.last_push_at ?? row.created_at));
}

/**
 * A store's state from its sync_stores row alone (no read of its records), so counting 1,000 stores
 * is one scan of one row each: silent past sync.store_silent_ms first (nothing else it says is
 * current), then records parked for an operator, then never pushed yet.
 */
export function storeState(row: StoreRow, nowMs: number, silentMs: number): StoreState {
  if (silentFor(row, nowMs) > silentMs) return 'silent';
  if (row.parked_count > 0) return 'attention';
  return row.last_push_at === null ? 'new' : 'ok';
}

/** The parts of a store that read its records (two one-row reads): done only for the rows shown. */
function detail(db: Db, row: StoreRow, nowMs: number, silentMs: number, received?: (storeId: string) => number | undefined): CentralStore {
  const store = centralSide(db);
  const newest = store.newestReceived(row.store_id);
  const report = store.latestReport(row.store_id, isoTime(nowMs - REPORT_WINDOW_MS));
  return {
    store_id: row.store_id,
    account_id: row.account_id,
    live_mode: row.live_mode === 1,
    state: storeState(row, nowMs, silentMs),
    created_at: row.created_at,
    silent_ms: silentFor(row, nowMs),
    // On a chain's core, what the fronts received (PostgreSQL, as last read) is ahead of SQLite's copy.
    received_seq: Math.max(row.received_seq, received?.(row.store_id) ?? 0),
    applied_seq: row.applied_seq,
    last_push_at: row.last_push_at,
    held: row.held_count,
    parked: row.parked_count,
    rejected: row.rejected_count,
    box_waiting: row.box_waiting,
    box_waiting_since: row.box_waiting_since,
    lag_ms: newest ? Math.max(0, Date.parse(newest.received_at) - Date.parse(newest.created_at)) : null,
    reconciliation: { reported_at: report?.received_at ?? null, day: report?.day ?? null },
  };
}

/**
 * A central's stores: counted by state, filtered (state, part of the id or account name), sorted
 * by silence (the longest silent first, then by id) and cut to one page. Read from the database
 * alone, so `posd stores list` works with the daemon stopped.
 */
export function listStores(
  config: Config,
  db: Db,
  nowMs: number,
  query: StoreQuery = {},
  opts: { names?: Record<string, string>; received?: (storeId: string) => number | undefined } = {},
): StoreListing {
  const silentMs = config.sync.store_silent_ms;
  const all = centralSide(db).stores();
  const counts: Record<StoreState, number> = { silent: 0, attention: 0, new: 0, ok: 0 };
  const text = query.text?.trim().toLowerCase() ?? '';
  const matched: Array<{ row: StoreRow; silent: number }> = [];
  for (const row of all) {
    const state = storeState(row, nowMs, silentMs);
    counts[state]++;
    if (query.state && state !== query.state) continue;
    if (text && !row.store_id.toLowerCase().includes(text) && !(opts.names?.[row.account_id] ?? '').toLowerCase().includes(text)) continue;
    matched.push({ row, silent: silentFor(row, nowMs) });
  }
  matched.sort((a, b) => b.silent - a.silent || a.row.store_id.localeCompare(b.row.store_id));
  const perPage = Math.max(1, query.per_page ?? STORES_PER_PAGE);
  const pages = Math.max(1, Math.ceil(matched.length / perPage));
  const page = Math.min(Math.max(1, Math.floor(query.page ?? 1)), pages);
  return {
    total: all.length,
    counts,
    matched: matched.length,
    page,
    pages,
    per_page: perPage,
    stores: matched.slice((page - 1) * perPage, page * perPage).map((m) => detail(db, m.row, nowMs, silentMs, opts.received)),
  };
}

/** One store, with the same reads as a row of the list; undefined when the central never heard of it. */
export function showStore(config: Config, db: Db, nowMs: number, storeId: string): CentralStore | undefined {
  const row = centralSide(db).storeRow(storeId);
  return row ? detail(db, row, nowMs, config.sync.store_silent_ms) : undefined;
}
