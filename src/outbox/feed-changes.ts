import { EventEmitter } from 'node:events';
import type { Db } from '../db/database.js';
import { perDb } from '../db/per-db.js';

/**
 * The central's side of the change feed: what the owning modules call, inside the transaction of a
 * change, to publish it to the account's store boxes (docs/sync-protocol.md, "Pull"). On a store it
 * does nothing: the feed is the central's, and a change a box applied from the feed must never be
 * published (or pushed) again.
 */
export interface FeedChangeInput {
  /** What changed: `balance_transaction`, `intent`, `product`, ... (see docs/sync-protocol.md). */
  kind: string;
  accountId: string;
  liveMode: boolean;
  objectId: string;
  /** The object's state after the change: a box upserts it by id. */
  payload: Record<string, unknown>;
  createdAt: string;
}

const roles = perDb((db) => db.prepare("SELECT value FROM meta WHERE key = 'role'"));

// The writing statements are prepared only at a central: a store's database (or an older one being
// made by the foundation alone) may not have the feed's columns.
const writeStatements = perDb((db) => ({
  organization: db.prepare('SELECT organization_id FROM accounts WHERE id = ?'),
  insert: db.prepare(
    `INSERT INTO sync_feed (organization_id, account_id, live_mode, kind, object_id, payload, created_at, origin_store_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  ),
}));

/** Whether this database is a central's (the role is in `meta`, as the key triggers read it). */
export function publishesFeed(db: Db): boolean {
  return (roles(db).get() as { value: string } | undefined)?.value === 'central';
}

// The store whose pushed record is being applied right now (set by the push engine around each
// applier), so a change it causes is tagged with its origin and not sent back to that box.
const origins = new WeakMap<Db, string | null>();

/** Runs `fn` with the changes it publishes tagged as coming from `storeId` (null: the central's own). */
export function withFeedOrigin<T>(db: Db, storeId: string | null, fn: () => T): T {
  const before = origins.get(db) ?? null;
  origins.set(db, storeId);
  try {
    return fn();
  } finally {
    origins.set(db, before);
  }
}

/** The store box whose push is being applied, or null for a change made at the central itself. */
export function feedOrigin(db: Db): string | null {
  return origins.get(db) ?? null;
}

// The doorbell of the feed: who writes a feed row rings it (for the row's organization, or null
// when it is not known), and the central's waiting long-polls listen (src/sync/central/feed-watch.ts). It
// rings after the writing tick: the transaction that wrote the row has committed by then (or rolled
// back, and a woken reader simply finds nothing). Rows written by another connection do not ring:
// the feed watch notices them by `PRAGMA data_version`.
const bells = perDb(() => ({ emitter: new EventEmitter().setMaxListeners(0), pending: new Set<string | null>(), scheduled: false }));

/** Emits `'rows'` with the organization ids (null: any) whose feed rows committed since the last ring. */
export function feedBell(db: Db): EventEmitter {
  return bells(db).emitter;
}

/** Says a feed row of this organization (null: unknown) is being written in the current transaction. */
export function ringFeed(db: Db, organizationId: string | null): void {
  const bell = bells(db);
  bell.pending.add(organizationId);
  if (bell.scheduled) return;
  bell.scheduled = true;
  setImmediate(() => {
    bell.scheduled = false;
    const orgs = [...bell.pending];
    bell.pending.clear();
    bell.emitter.emit('rows', orgs);
  });
}

/**
 * Appends one change to the central's feed, inside the transaction of the change (so the feed and
 * the object never disagree, and a crash loses neither). A no-op anywhere but at a central. Returns
 * whether a row was written.
 */
export function appendFeedChange(db: Db, input: FeedChangeInput): boolean {
  if (!db.inTransaction) throw new Error('appendFeedChange() outside a transaction');
  if (!publishesFeed(db)) return false;
  const s = writeStatements(db);
  const org = s.organization.get(input.accountId) as { organization_id: string } | undefined;
  if (!org) throw new Error(`appendFeedChange: unknown account ${input.accountId}`);
  s.insert.run(
    org.organization_id,
    input.accountId,
    input.liveMode ? 1 : 0,
    input.kind,
    input.objectId,
    JSON.stringify(input.payload),
    input.createdAt,
    feedOrigin(db),
  );
  ringFeed(db, org.organization_id);
  return true;
}
