import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';
import type { KeySnapshot } from '../shared/wire.js';
import type { SyncAccountRow } from '../pg/read-models.js';
import type { ReceivedRow } from './sync-store.js';

/** A record the core decided, as it reports it to PostgreSQL. */
export interface DecidedRow {
  seq: number;
  outcome: ReceivedRow['outcome'];
  reason: string | null;
  created_at: string;
}

/**
 * The SQL of the core of a chain on PostgreSQL (src/sync/central/pg-core.ts) against its own SQLite: the
 * ingest of received records, what it reports back, the feed's seq after a takeover and the read
 * models it publishes. Prepared once per database.
 */
export const coreStore = perDb((db: Db) => {
  const s = {
    // Idempotent by id and by (store_id, seq): a batch copied twice inserts nothing the second time
    // (checked after: an ignored row must be that same record).
    insertReceived: db.prepare(
      `INSERT OR IGNORE INTO sync_received (id, store_id, seq, account_id, live_mode, kind, hash, payload, created_at, received_at, outcome, reason, decided_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    receivedAt: db.prepare('SELECT id FROM sync_received WHERE store_id = ? AND seq = ?'),
    insertStore: db.prepare(
      'INSERT INTO sync_stores (store_id, account_id, live_mode, applied_seq, created_at) VALUES (?, ?, ?, 0, ?) ON CONFLICT(store_id) DO NOTHING',
    ),
    advanceReceived: db.prepare('UPDATE sync_stores SET received_seq = max(received_seq, ?), last_push_at = ? WHERE store_id = ?'),
    boxWaiting: db.prepare('UPDATE sync_stores SET box_waiting = ?, box_waiting_since = ? WHERE store_id = ?'),
    decidedRange: db.prepare('SELECT seq, outcome, reason, created_at FROM sync_received WHERE store_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?'),
    decidedAt: db.prepare('SELECT seq, outcome, reason, created_at FROM sync_received WHERE store_id = ? AND seq = ?'),
    // One statement per outcome, each naming it literally, so SQLite uses that outcome's partial index.
    heldSeqs: db.prepare("SELECT seq FROM sync_received WHERE store_id = ? AND outcome = 'held'").pluck(),
    parkedSeqs: db.prepare("SELECT seq FROM sync_received WHERE store_id = ? AND outcome = 'parked'").pluck(),
    skippedSeqs: db.prepare("SELECT seq FROM sync_received WHERE store_id = ? AND outcome = 'skipped'").pluck(),
    feedMax: db.prepare('SELECT coalesce(max(seq), 0) FROM sync_feed').pluck(),
    feedSequence: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'sync_feed'").pluck(),
    setFeedSequence: db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'sync_feed'"),
    insertFeedSequence: db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('sync_feed', ?)"),
    organizations: db.prepare('SELECT id, name, created_at FROM organizations ORDER BY id'),
    organizationsIn: db.prepare('SELECT id, name, created_at FROM organizations WHERE id IN (SELECT value FROM json_each(?))'),
    accounts: db.prepare(
      `SELECT id, organization_id, live_mode, name, sandbox_of, parent_account_id, tax_id, tax_name, country, default_currency, event_format, created_at, currencies
       FROM accounts ORDER BY created_at, id`,
    ),
    // An account and its sandboxes (an `account` feed row carries both).
    accountsIn: db.prepare(
      `SELECT id, organization_id, live_mode, name, sandbox_of, parent_account_id, tax_id, tax_name, country, default_currency, event_format, created_at, currencies
       FROM accounts WHERE id IN (SELECT value FROM json_each(?)) OR sandbox_of IN (SELECT value FROM json_each(?))`,
    ),
    keys: db.prepare(
      'SELECT id, prefix, hash, kind, environment, account_id, organization_id, live_mode, created_at, revoked_at FROM api_keys ORDER BY created_at, id',
    ),
    keysIn: db.prepare(
      'SELECT id, prefix, hash, kind, environment, account_id, organization_id, live_mode, created_at, revoked_at FROM api_keys WHERE id IN (SELECT value FROM json_each(?))',
    ),
  };
  const account = (r: Omit<SyncAccountRow, 'live_mode' | 'currencies'> & { live_mode: number; currencies: string }): SyncAccountRow => ({
    ...r,
    live_mode: r.live_mode === 1,
    currencies: JSON.parse(r.currencies) as string[],
  });
  return {
    /**
     * Appends PostgreSQL's received records of one store (in seq order) as `received` (or as
     * `rejected`, with its reason, when the front refused it at receipt: decided, never applied) and
     * moves its `received_seq`, in the caller's transaction. Returns the rejected records new here
     * (a batch copied twice returns none the second time). Throws when a (store, seq) or an id is
     * held here by another record (a push the core took itself, not through PostgreSQL).
     */
    ingest(
      store: { store_id: string; account_id: string; live_mode: boolean; box_waiting?: number | null; box_waiting_since?: string | null },
      rows: ReadonlyArray<Omit<ReceivedRow, 'outcome' | 'reason' | 'store_id'> & { outcome?: string; reason?: string | null }>,
      at: string,
    ): Array<Omit<ReceivedRow, 'store_id' | 'outcome' | 'reason'> & { reason: string }> {
      s.insertStore.run(store.store_id, store.account_id, store.live_mode ? 1 : 0, at);
      const rejected: Array<Omit<ReceivedRow, 'store_id' | 'outcome' | 'reason'> & { reason: string }> = [];
      for (const r of rows) {
        const refused = r.outcome === 'rejected';
        const reason = refused ? (r.reason ?? 'rejected at receipt') : null;
        // Bound by position, the row not copied: no object spreads and no bind by name per record
        // (docs/decisions/0283-where-a-records-cpu-goes.md).
        const inserted = s.insertReceived.run(
          r.id,
          store.store_id,
          r.seq,
          r.account_id,
          r.live_mode,
          r.kind,
          r.hash,
          r.payload,
          r.created_at,
          r.received_at,
          refused ? 'rejected' : 'received',
          reason,
          refused ? at : null,
        ).changes;
        if (inserted) {
          if (refused) rejected.push({ ...r, reason: reason as string });
          continue;
        }
        const there = s.receivedAt.get(store.store_id, r.seq) as { id: string } | undefined;
        if (there?.id !== r.id) throw new Error(`record ${r.id} (store ${store.store_id}, seq ${r.seq}) is held at the core under another store or seq`);
      }
      if (rows.length) s.advanceReceived.run(rows[rows.length - 1].seq, at, store.store_id);
      // The box's backlog as it said at its last push (read with the store's row from PostgreSQL).
      if (store.box_waiting !== undefined) s.boxWaiting.run(store.box_waiting, store.box_waiting_since ?? null, store.store_id);
      return rejected;
    },
    /** The decided records of a store in (`after`, `upTo`], in order, at most `limit`. */
    decidedRange(storeId: string, after: number, upTo: number, limit: number): DecidedRow[] {
      return s.decidedRange.all(storeId, after, upTo, limit) as DecidedRow[];
    },
    decidedAt(storeId: string, seq: number): DecidedRow | undefined {
      return s.decidedAt.get(storeId, seq) as DecidedRow | undefined;
    },
    /** Seqs the core has as held, parked or skipped for a store (partial indexes). */
    undecidedSeqs(storeId: string): number[] {
      return [...(s.heldSeqs.all(storeId) as number[]), ...(s.parkedSeqs.all(storeId) as number[]), ...(s.skippedSeqs.all(storeId) as number[])];
    },
    /**
     * Moves the feed's next seq past `position` (PostgreSQL's highest), when the core's feed is
     * behind it: a core restored from an older backup, or a standby with its own copy, would
     * otherwise hand out positions PostgreSQL already holds, and the relay would drop its rows.
     * Returns the seq the feed continues after.
     */
    feedPast(position: number): number {
      return db.transaction(() => {
        const local = Math.max(s.feedMax.get() as number, (s.feedSequence.get() as number | undefined) ?? 0);
        if (position <= local) return local;
        if (s.setFeedSequence.run(position).changes === 0) s.insertFeedSequence.run(position);
        return position;
      })();
    },
    organizations(ids?: readonly string[]): Array<{ id: string; name: string; created_at: string }> {
      return (ids ? s.organizationsIn.all(JSON.stringify(ids)) : s.organizations.all()) as Array<{ id: string; name: string; created_at: string }>;
    },
    accounts(ids?: readonly string[]): SyncAccountRow[] {
      const rows = ids ? s.accountsIn.all(JSON.stringify(ids), JSON.stringify(ids)) : s.accounts.all();
      return (rows as Array<Omit<SyncAccountRow, 'live_mode' | 'currencies'> & { live_mode: number; currencies: string }>).map(account);
    },
    keys(ids?: readonly string[]): KeySnapshot[] {
      return (ids ? s.keysIn.all(JSON.stringify(ids)) : s.keys.all()) as KeySnapshot[];
    },
  };
});
