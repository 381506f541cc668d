import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';

/** Keys of `sync_state`, one place so the CLI, the worker and the status agree. */
export const STATE = {
  storeId: 'store_id',
  centralUrl: 'central_url',
  centralKey: 'central_key',
  /** The central's certificate `posd init` pinned (PEM) and its SHA-256 fingerprint. */
  centralCa: 'central_ca',
  centralFingerprint: 'central_fingerprint',
  ackedSeq: 'acked_seq',
  eventsCursor: 'events_cursor',
  feedCursor: 'feed_cursor',
  lastPushOk: 'last_push_ok_at',
  lastPullOk: 'last_pull_ok_at',
  lastError: 'last_error',
  lastErrorAt: 'last_error_at',
  clockOffset: 'clock_offset_ms',
  lastAttemptOk: 'last_attempt_ok',
  /** When the first failure after a success (or the first failure ever) happened; cleared by a success. */
  linkDownSince: 'link_down_since',
} as const;

export interface EventRow {
  seq: number;
  id: string;
  account_id: string;
  live_mode: number;
  type: string;
  object_id: string | null;
  payload: string;
  created_at: string;
}

/**
 * What both roles read of sync: `sync_state` and the events a cursor walks (the push loop, webhooks).
 * Each role's store (sync/store/sync-store.ts, sync/central/sync-store.ts) extends it.
 */
export class SyncState {
  private readonly stateSql;

  constructor(readonly db: Db) {
    this.stateSql = {
      getState: db.prepare('SELECT value FROM sync_state WHERE key = ?'),
      setState: db.prepare('INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value'),
      delState: db.prepare('DELETE FROM sync_state WHERE key = ?'),
      eventsAfter: db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?'),
    };
  }

  state(key: string): string | undefined {
    return (this.stateSql.getState.get(key) as { value: string } | undefined)?.value;
  }
  setState(key: string, value: string | number | null): void {
    if (value === null) this.stateSql.delState.run(key);
    else this.stateSql.setState.run(key, String(value));
  }
  eventsAfter(seq: number, limit: number): EventRow[] {
    return this.stateSql.eventsAfter.all(seq, limit) as EventRow[];
  }
}

export const syncState = perDb((db) => new SyncState(db));
