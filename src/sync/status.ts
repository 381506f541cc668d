import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { syncStore } from './store.js';

/** Keys of `sync_state`, one place so the CLI, the worker and the status agree. */
export const STATE = {
  storeId: 'store_id',
  centralUrl: 'central_url',
  centralKey: 'central_key',
  ackedSeq: 'acked_seq',
  eventsCursor: 'events_cursor',
  feedCursor: 'feed_cursor',
  lastPushOk: 'last_push_ok_at',
  lastPullOk: 'last_pull_ok_at',
  lastError: 'last_error',
  lastErrorAt: 'last_error_at',
  clockOffset: 'clock_offset_ms',
  lastAttemptOk: 'last_attempt_ok',
} as const;

export interface SyncStatus {
  role: 'store' | 'central';
  configured: boolean;
  central_url: string | null;
  store_id: string | null;
  connected: boolean;
  last_success_at: string | null;
  last_pull_at: string | null;
  records_waiting: number;
  oldest_waiting_at: string | null;
  acked_seq: number;
  last_error: string | null;
  last_error_at: string | null;
  central_clock_offset_ms: number | null;
  warnings: string[];
  rejected_records: number;
  /** The central's latest decisions on this box's records, newest first (at most 20). */
  decisions: Array<{ record_id: string; kind: string; reason: string; decided_at: string }>;
  /** Central: records kept without an applier for their kind (applied after an upgrade). */
  held_records: number;
  reconciliation: {
    state: 'never' | 'equal' | 'different';
    checked_at: string | null;
    differences: Array<{
      account_id: string;
      live_mode: boolean;
      day: string;
      currency: string;
      measure: string;
      store_count: number;
      store_sum: number;
      central_count: number;
      central_sum: number;
    }>;
  };
}

/** Where the store pushes and with which key: config wins, else what `posd init --central-url` stored. */
export function centralTarget(config: Config, db: Db): { url: string; key: string } | null {
  const store = syncStore(db);
  const url = config.sync.central_url || store.state(STATE.centralUrl) || '';
  const key = config.sync.central_key || store.state(STATE.centralKey) || '';
  return url && key ? { url: url.replace(/\/$/, ''), key } : null;
}

/** Read from the database alone, so `posd sync status` works with the daemon stopped. */
export function syncStatus(config: Config, db: Db): SyncStatus {
  const store = syncStore(db);
  return db.transaction((): SyncStatus => {
    const target = centralTarget(config, db);
    const acked = Number(store.state(STATE.ackedSeq) ?? 0);
    const waiting = store.waiting(acked);
    const offsetText = store.state(STATE.clockOffset);
    const offset = offsetText === undefined ? null : Number(offsetText);
    const warnings: string[] = [];
    if (offset !== null && Math.abs(offset) > config.sync.clock_warn_ms) {
      warnings.push(`this box's clock differs from the central's by ${Math.round(offset / 1000)} s; fix the time (NTP)`);
    }
    const diffs = store.reconciliationDiffs();
    const checkedAt = store.lastReconciled();
    return {
      role: config.role,
      configured: target !== null,
      central_url: target?.url ?? null,
      store_id: store.state(STATE.storeId) ?? null,
      connected: store.state(STATE.lastAttemptOk) === '1',
      last_success_at: store.state(STATE.lastPushOk) ?? null,
      last_pull_at: store.state(STATE.lastPullOk) ?? null,
      records_waiting: waiting.n,
      oldest_waiting_at: waiting.oldest,
      acked_seq: acked,
      last_error: store.state(STATE.lastError) ?? null,
      last_error_at: store.state(STATE.lastErrorAt) ?? null,
      central_clock_offset_ms: offset,
      warnings,
      rejected_records: store.decisionCount(),
      decisions: store.latestDecisions(20),
      held_records: store.heldCount(),
      reconciliation: {
        state: checkedAt === null ? 'never' : diffs.length ? 'different' : 'equal',
        checked_at: checkedAt,
        differences: diffs.map((d) => ({
          account_id: d.account_id,
          live_mode: d.live_mode === 1,
          day: d.day,
          currency: d.currency,
          measure: d.measure,
          store_count: d.store_count,
          store_sum: d.store_sum,
          central_count: d.central_count,
          central_sum: d.central_sum,
        })),
      },
    };
  })();
}
