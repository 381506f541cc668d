import type { Statement } from 'better-sqlite3';
import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';
import { ringFeed } from '../../outbox/feed-changes.js';
import { SyncState } from '../shared/state.js';
import type { CountSum, FactRow } from '../shared/summary.js';

export interface StoreRow {
  store_id: string;
  account_id: string;
  live_mode: number;
  /** The highest seq durably received: what a push answers, the box's cursor. */
  received_seq: number;
  /** The projector's cursor: every record up to it is decided (applied, rejected, held or parked). */
  applied_seq: number;
  last_push_at: string | null;
  created_at: string;
  /** Records of this store in each outcome but applied (kept by triggers on `sync_received`). */
  held_count: number;
  rejected_count: number;
  parked_count: number;
  skipped_count: number;
  /** What the box said it still held after its last push (NULL: never said). */
  box_waiting: number | null;
  box_waiting_since: string | null;
}

export interface ReceivedRow {
  id: string;
  store_id: string;
  seq: number;
  account_id: string;
  live_mode: number;
  kind: string;
  hash: string;
  payload: string;
  created_at: string;
  received_at: string;
  outcome: 'received' | 'applied' | 'rejected' | 'held' | 'parked' | 'skipped';
  reason: string | null;
  decided_at?: string | null;
  note?: string | null;
}

export interface OperatorRecord {
  id: string;
  store_id: string;
  seq: number;
  kind: string;
  account_id: string;
  outcome: 'held' | 'parked' | 'skipped';
  reason: string | null;
  received_at: string;
  decided_at: string | null;
  note: string | null;
}

export interface FeedRow {
  seq: number;
  organization_id: string;
  account_id: string | null;
  live_mode: number;
  kind: string;
  object_id: string | null;
  payload: string;
  created_at: string;
  /** The store box whose push caused the change (never sent back to it); null: the central's own. */
  origin_store_id?: string | null;
  /** The only store box this change is for (a refusal of its record); null: every box of the account. */
  to_store_id?: string | null;
}

/** The central's SQL of sync: the store boxes it knows, their received records and outcomes, and the feed. */
export class CentralSideStore extends SyncState {
  private readonly s;
  private readonly feedAfterBySize = new Map<number, Statement>();

  constructor(db: Db) {
    super(db);
    this.s = {
      getStore: db.prepare('SELECT * FROM sync_stores WHERE store_id = ?'),
      // The counters, not count(*) per outcome: that read every record a store ever pushed.
      listStores: db.prepare('SELECT * FROM sync_stores ORDER BY last_push_at'),
      // Stores silent since before a time (never pushed: since they joined), the longest first.
      silent: db.prepare(
        'SELECT store_id, coalesce(last_push_at, created_at) AS since, count(*) OVER () AS n FROM sync_stores WHERE coalesce(last_push_at, created_at) < ? ORDER BY since, store_id LIMIT ?',
      ),
      storeCount: db.prepare('SELECT count(*) AS n, max(last_push_at) AS last FROM sync_stores'),
      insertStore: db.prepare(
        'INSERT INTO sync_stores (store_id, account_id, live_mode, applied_seq, created_at) VALUES (?, ?, ?, 0, ?) ON CONFLICT(store_id) DO NOTHING',
      ),
      setReceived: db.prepare('UPDATE sync_stores SET received_seq = ?, last_push_at = ?, box_waiting = ?, box_waiting_since = ? WHERE store_id = ?'),
      setApplied: db.prepare('UPDATE sync_stores SET applied_seq = ? WHERE store_id = ?'),
      // The projector's slice: its records still 'received' become 'applied' in one statement (the
      // ones it rejected, held or parked were given their outcome one by one before).
      markApplied: db.prepare("UPDATE sync_received SET outcome = 'applied' WHERE store_id = ? AND seq > ? AND seq <= ? AND outcome = 'received'"),
      // What the projector has to do: stores with records past their cursor, or held records. A
      // scan of sync_stores (one row per box), never of the records.
      pendingStores: db.prepare('SELECT * FROM sync_stores WHERE received_seq > applied_seq OR held_count > 0 ORDER BY store_id'),
      // A store's newest record, by the (store_id, seq) key: one row read.
      newestReceived: db.prepare('SELECT created_at, received_at FROM sync_received WHERE store_id = ? ORDER BY seq DESC LIMIT 1'),
      // Its latest reconciliation report since a time, through sync_received_day (index only until the match).
      latestReport: db.prepare(
        `SELECT received_at, payload FROM sync_received WHERE store_id = ? AND created_at >= ? AND kind = 'reconciliation_report'
         ORDER BY created_at DESC LIMIT 1`,
      ),
      received: db.prepare('SELECT * FROM sync_received WHERE id = ?'),
      receivedAt: db.prepare('SELECT * FROM sync_received WHERE store_id = ? AND seq = ?'),
      insertReceived: db.prepare(
        `INSERT INTO sync_received (id, store_id, seq, account_id, live_mode, kind, hash, payload, created_at, received_at, outcome, reason, decided_at)
         VALUES (@id, @store_id, @seq, @account_id, @live_mode, @kind, @hash, @payload, @created_at, @received_at, @outcome, @reason, @decided_at)`,
      ),
      insertFeed: db.prepare(
        `INSERT INTO sync_feed (organization_id, account_id, live_mode, kind, object_id, payload, created_at, to_store_id)
         VALUES (@organization_id, @account_id, @live_mode, @kind, @object_id, @payload, @created_at, @to_store_id)`,
      ),
      // Records held for review (reason 'review: ...') wait for an operator, not for the held sweep.
      held: db.prepare("SELECT * FROM sync_received WHERE outcome = 'held' AND coalesce(reason, '') NOT LIKE 'review:%' ORDER BY received_at, store_id, seq"),
      // INDEXED BY: the (store_id, seq) key fits the WHERE and the ORDER BY as well, and reads the
      // store's whole history; the partial index reads its held rows only (a plan test pins it).
      heldOf: db.prepare(
        "SELECT * FROM sync_received INDEXED BY sync_received_held WHERE store_id = ? AND outcome = 'held' AND coalesce(reason, '') NOT LIKE 'review:%' ORDER BY seq",
      ),
      inReview: db.prepare(
        "SELECT id, store_id, seq, kind, account_id, received_at, reason FROM sync_received WHERE outcome = 'held' AND reason LIKE 'review:%' AND (? IS NULL OR store_id = ?) ORDER BY store_id, seq LIMIT ?",
      ),
      release: db.prepare("UPDATE sync_received SET reason = ?, note = ?, decided_at = ? WHERE id = ? AND outcome = 'held' AND reason LIKE 'review:%'"),
      rejectReview: db.prepare(
        "UPDATE sync_received SET outcome = 'rejected', reason = ?, note = ?, decided_at = ? WHERE id = ? AND outcome = 'held' AND reason LIKE 'review:%'",
      ),
      receivedAfter: db.prepare('SELECT * FROM sync_received WHERE store_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
      heldCount: db.prepare("SELECT count(*) AS n FROM sync_received WHERE outcome = 'held'"),
      setOutcome: db.prepare('UPDATE sync_received SET outcome = ?, reason = ?, decided_at = ? WHERE id = ?'),
      // One statement per outcome, each naming it literally, so SQLite uses that outcome's partial index.
      list_held: db.prepare(
        `SELECT id, store_id, seq, kind, account_id, outcome, reason, received_at, decided_at, note FROM sync_received
         WHERE outcome = 'held' AND (? IS NULL OR store_id = ?) ORDER BY store_id, seq LIMIT ?`,
      ),
      count_held: db.prepare("SELECT count(*) FROM sync_received WHERE outcome = 'held'").pluck(),
      list_parked: db.prepare(
        `SELECT id, store_id, seq, kind, account_id, outcome, reason, received_at, decided_at, note FROM sync_received
         WHERE outcome = 'parked' AND (? IS NULL OR store_id = ?) ORDER BY store_id, seq LIMIT ?`,
      ),
      count_parked: db.prepare("SELECT count(*) FROM sync_received WHERE outcome = 'parked'").pluck(),
      list_skipped: db.prepare(
        `SELECT id, store_id, seq, kind, account_id, outcome, reason, received_at, decided_at, note FROM sync_received
         WHERE outcome = 'skipped' AND (? IS NULL OR store_id = ?) ORDER BY store_id, seq LIMIT ?`,
      ),
      count_skipped: db.prepare("SELECT count(*) FROM sync_received WHERE outcome = 'skipped'").pluck(),
      outcomeOf: db.prepare('SELECT outcome, reason FROM sync_received WHERE id = ?'),
      retry: db.prepare("UPDATE sync_received SET outcome = 'held', decided_at = NULL WHERE id = ? AND outcome = 'parked'"),
      skip: db.prepare("UPDATE sync_received SET outcome = 'skipped', note = ?, decided_at = ? WHERE id = ? AND outcome IN ('parked', 'held')"),
      feedMax: db.prepare('SELECT coalesce(max(seq), 0) AS m FROM sync_feed'),
      receivedDay: db.prepare(
        `SELECT account_id, live_mode, kind, payload FROM sync_received INDEXED BY sync_received_day
         WHERE store_id = ? AND created_at >= ? AND created_at < ? AND kind NOT IN ('event', 'reconciliation_report')`,
      ),
      // An event counts at the central once it was re-emitted there, not merely received. An event
      // record's created_at is its event's (the push loop copies it, the applier keeps it), so the
      // day bounds the records read too: without it every event the store ever pushed was joined.
      centralEventsDay: db.prepare(
        `SELECT e.account_id, e.live_mode, '' AS currency, 'events' AS measure, count(*) AS count, 0 AS sum
         FROM sync_received r INDEXED BY sync_received_day JOIN events e ON e.id = json_extract(r.payload, '$.id')
         WHERE r.store_id = ? AND r.created_at >= ? AND r.created_at < ? AND r.kind = 'event'
           AND e.created_at >= ? AND e.created_at < ?
         GROUP BY e.account_id, e.live_mode`,
      ),
    };
  }

  storeRow(storeId: string): StoreRow | undefined {
    return this.s.getStore.get(storeId) as StoreRow | undefined;
  }
  stores(): StoreRow[] {
    return this.s.listStores.all() as StoreRow[];
  }
  /** How many stores have been silent since before `beforeIso`, and the first `limit` of them, the longest silent first. */
  silentStores(beforeIso: string, limit: number): { count: number; first: Array<{ store_id: string; since: string }> } {
    const rows = this.s.silent.all(beforeIso, limit) as Array<{ store_id: string; since: string; n: number }>;
    return { count: rows[0]?.n ?? 0, first: rows.map((r) => ({ store_id: r.store_id, since: r.since })) };
  }
  /** How many store boxes this central knows, and the latest push of any. */
  storeCount(): { n: number; last: string | null } {
    return this.s.storeCount.get() as { n: number; last: string | null };
  }
  /** When the store's newest record was made and when the central received it. */
  newestReceived(storeId: string): { created_at: string; received_at: string } | undefined {
    return this.s.newestReceived.get(storeId) as { created_at: string; received_at: string } | undefined;
  }
  /** The store's latest reconciliation report made since `sinceIso` (its day, when it came). */
  latestReport(storeId: string, sinceIso: string): { received_at: string; day: string | null } | undefined {
    const row = this.s.latestReport.get(storeId, sinceIso) as { received_at: string; payload: string } | undefined;
    if (!row) return undefined;
    const day = (JSON.parse(row.payload) as { day?: unknown }).day;
    return { received_at: row.received_at, day: typeof day === 'string' ? day : null };
  }
  ensureStore(storeId: string, accountId: string, liveMode: boolean, at: string): StoreRow {
    this.s.insertStore.run(storeId, accountId, liveMode ? 1 : 0, at);
    return this.storeRow(storeId)!;
  }
  /** A push's records up to `receivedSeq` are durable (and it came `at`). */
  setReceived(storeId: string, receivedSeq: number, at: string, box: { waiting?: number; waiting_since?: string | null } = {}): void {
    this.s.setReceived.run(receivedSeq, at, box.waiting ?? null, box.waiting === undefined ? null : (box.waiting_since ?? null), storeId);
  }
  /** The projector decided the records in (`after`, `upTo`]: the ones still 'received' were applied, and the cursor moves. */
  setApplied(storeId: string, after: number, upTo: number): void {
    this.s.markApplied.run(storeId, after, upTo);
    this.s.setApplied.run(upTo, storeId);
  }
  /** Stores the projector has records (or held records) to apply for. */
  pendingStores(): StoreRow[] {
    return this.s.pendingStores.all() as StoreRow[];
  }
  received(id: string): ReceivedRow | undefined {
    return this.s.received.get(id) as ReceivedRow | undefined;
  }
  receivedAt(storeId: string, seq: number): ReceivedRow | undefined {
    return this.s.receivedAt.get(storeId, seq) as ReceivedRow | undefined;
  }
  insertReceived(row: ReceivedRow): void {
    this.s.insertReceived.run({ ...row, decided_at: row.decided_at ?? null });
  }
  held(): ReceivedRow[] {
    return this.s.held.all() as ReceivedRow[];
  }
  /** One store's held records, in its order. */
  heldOf(storeId: string): ReceivedRow[] {
    return this.s.heldOf.all(storeId) as ReceivedRow[];
  }
  /** Central: what it holds of one store's records after `seq`, in the store's order. */
  receivedAfter(storeId: string, seq: number, limit: number): ReceivedRow[] {
    return this.s.receivedAfter.all(storeId, seq, limit) as ReceivedRow[];
  }
  heldCount(): number {
    return (this.s.heldCount.get() as { n: number }).n;
  }
  setOutcome(id: string, outcome: 'applied' | 'rejected' | 'parked' | 'held', reason: string | null, decidedAt: string | null = null): void {
    this.s.setOutcome.run(outcome, reason, decidedAt, id);
  }
  /** Records waiting for (or decided by) an operator, oldest first per store. */
  recordsIn(outcome: 'parked' | 'skipped' | 'held', storeId: string | null, limit: number): OperatorRecord[] {
    const stmt = outcome === 'held' ? this.s.list_held : outcome === 'parked' ? this.s.list_parked : this.s.list_skipped;
    return stmt.all(storeId, storeId, limit) as OperatorRecord[];
  }
  /** How many records are held, parked and skipped at this central. */
  outcomeCounts(): { held: number; parked: number; skipped: number } {
    return { held: this.s.count_held.get() as number, parked: this.s.count_parked.get() as number, skipped: this.s.count_skipped.get() as number };
  }
  outcomeOf(id: string): { outcome: ReceivedRow['outcome']; reason: string | null } | undefined {
    return this.s.outcomeOf.get(id) as { outcome: ReceivedRow['outcome']; reason: string | null } | undefined;
  }
  /** Records held for an operator's review (issue 32's thresholds), in each store's order. */
  inReview(storeId: string | null, limit: number): Array<Pick<ReceivedRow, 'id' | 'store_id' | 'seq' | 'kind' | 'account_id' | 'received_at' | 'reason'>> {
    return this.s.inReview.all(storeId, storeId, limit) as never;
  }
  /** An operator releases a record held for review: the held sweep applies it, past the thresholds. False if it was not in review. */
  releaseReview(id: string, note: string, at: string): boolean {
    return this.s.release.run(`released: ${note}`, note, at, id).changes === 1;
  }
  /** An operator refuses a record held for review: rejected for good (the box hears it). False if it was not in review. */
  rejectReview(id: string, reason: string, note: string, at: string): boolean {
    return this.s.rejectReview.run(reason, note, at, id).changes === 1;
  }
  /** A parked record back to held: the central's held sweep applies it again. False if it was not parked. */
  retry(id: string): boolean {
    return this.s.retry.run(id).changes === 1;
  }
  /** An operator gives up on a parked (or held) record, saying why. False if it was neither. */
  skip(id: string, note: string, at: string): boolean {
    return this.s.skip.run(note, at, id).changes === 1;
  }
  insertFeed(row: Omit<FeedRow, 'seq' | 'origin_store_id' | 'to_store_id'> & { to_store_id?: string | null }): void {
    this.s.insertFeed.run({ ...row, to_store_id: row.to_store_id ?? null });
    ringFeed(this.db, row.organization_id);
  }
  feedMax(): number {
    return (this.s.feedMax.get() as { m: number }).m;
  }
  /**
   * Feed rows after `after` for these accounts, plus the organization-wide rows of that organization,
   * leaving out the changes that store box's own push caused (no echo) and those for another box.
   */
  feedAfter(after: number, accountIds: string[], organizationId: string, storeId: string, limit: number): FeedRow[] {
    // One statement per scope size, prepared once: a long-poll woken often re-reads with it.
    let stmt = this.feedAfterBySize.get(accountIds.length);
    if (!stmt) {
      const marks = accountIds.map(() => '?').join(',');
      stmt = this.db.prepare(
        `SELECT * FROM sync_feed WHERE seq > ? AND (account_id IN (${marks}) OR (account_id IS NULL AND organization_id = ?))
           AND (origin_store_id IS NULL OR origin_store_id <> ?) AND (to_store_id IS NULL OR ? = '' OR to_store_id = ?)
         ORDER BY seq LIMIT ?`,
      );
      this.feedAfterBySize.set(accountIds.length, stmt);
    }
    return stmt.all(after, ...accountIds, organizationId, storeId, storeId, storeId, limit) as FeedRow[];
  }
  centralFacts(storeId: string, from: string, until: string): FactRow[] {
    return this.s.receivedDay.all(storeId, from, until) as FactRow[];
  }
  centralEvents(storeId: string, from: string, until: string): CountSum[] {
    return this.s.centralEventsDay.all(storeId, from, until, from, until) as CountSum[];
  }
}

export const centralSide = perDb((db) => new CentralSideStore(db));
