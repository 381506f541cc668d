import type { Db } from '../db/database.js';
import { newId } from '../ids.js';
import { perDb } from '../db/per-db.js';

export interface SyncRecordInput {
  /** What the fact is: `cash_sale`, `terminal_payment`, `refund`, `booking`, ... (see docs/sync-protocol.md). */
  kind: string;
  accountId: string;
  liveMode: boolean;
  /** The fact itself, enough for central to apply it idempotently (it carries its own ids). */
  payload: Record<string, unknown>;
  createdAt: string;
  /** Globally unique; defaults to a fresh `sync_` id. */
  id?: string;
}

// Prepared once per database: this runs inside every money write.
const insertStatement = perDb((db) =>
  db.prepare(
    `INSERT INTO sync_outbox (id, account_id, live_mode, kind, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT(id) DO NOTHING`,
  ),
);

/**
 * Appends a fact to the store's sync outbox. Call it inside the transaction of the change (money
 * records are append-only facts; the push worker sends them in `seq` order and central applies each
 * by id, so a repeated push changes nothing).
 */
export function appendSyncRecord(db: Db, input: SyncRecordInput): string {
  if (!db.inTransaction) throw new Error('appendSyncRecord() outside a transaction');
  if (feedPages.has(db)) throw new Error(`appendSyncRecord(${input.kind}) while applying the central's feed: the central has this change already`);
  const id = input.id ?? newId('sync');
  insertStatement(db).run(id, input.accountId, input.liveMode ? 1 : 0, input.kind, JSON.stringify(input.payload), input.createdAt);
  return id;
}

// Databases applying a page of the central's feed right now: what the page writes came from the
// central, so pushing it back would echo it (and, for money, count it twice).
const feedPages = new WeakSet<Db>();

/** Runs `fn` (a feed page's appliers) with `appendSyncRecord` refused on this database. */
export function applyingFeed<T>(db: Db, fn: () => T): T {
  feedPages.add(db);
  try {
    return fn();
  } finally {
    feedPages.delete(db);
  }
}

/**
 * Runs `fn` inside a feed page with `appendSyncRecord` allowed again: for the store's own reaction
 * to a central's decision (a refused booking cancelled here), which the central has not seen and
 * must learn like any other change made at this box.
 */
export function actingOnOwnDecision<T>(db: Db, fn: () => T): T {
  if (!feedPages.has(db)) return fn();
  feedPages.delete(db);
  try {
    return fn();
  } finally {
    feedPages.add(db);
  }
}

/** Whether this database is applying a page of the central's feed right now (what it writes is the central's). */
export function isApplyingFeed(db: Db): boolean {
  return feedPages.has(db);
}
