import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';
import { SyncState } from '../shared/state.js';
import type { CountSum, FactRow } from '../shared/summary.js';

/** A row of the store's `sync_outbox`. */
export interface OutboxRow {
  seq: number;
  id: string;
  account_id: string;
  live_mode: number;
  kind: string;
  payload: string;
  created_at: string;
}

export interface ReconciliationRow {
  account_id: string;
  live_mode: number;
  day: string;
  currency: string;
  measure: string;
  store_count: number;
  store_sum: number;
  central_count: number;
  central_sum: number;
  checked_at: string;
}

export type OutageLink = 'central' | 'processor';

export interface OutageWindowRow {
  seq: number;
  link: OutageLink;
  started_at: string;
  ended_at: string | null;
}

/** The store box's SQL of sync: its outbox, the central's decisions it was told, reconciliation and outage windows. */
export class StoreSideStore extends SyncState {
  private readonly s;

  constructor(db: Db) {
    super(db);
    this.s = {
      outboxAfter: db.prepare('SELECT * FROM sync_outbox WHERE seq > ? ORDER BY seq LIMIT ?'),
      waiting: db.prepare('SELECT count(*) AS n, min(created_at) AS oldest, max(seq) AS last FROM sync_outbox WHERE seq > ?'),
      lastSeqBefore: db.prepare('SELECT coalesce(max(seq), 0) AS m FROM sync_outbox WHERE created_at < ?'),
      maxSeq: db.prepare('SELECT coalesce(max(seq), 0) AS m FROM sync_outbox'),
      insertDecision: db.prepare(
        `INSERT INTO sync_decisions (record_id, account_id, live_mode, kind, reason, decided_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(record_id) DO NOTHING`,
      ),
      decisionCount: db.prepare('SELECT count(*) AS n FROM sync_decisions'),
      latestDecisions: db.prepare('SELECT record_id, kind, reason, decided_at FROM sync_decisions ORDER BY decided_at DESC, rowid DESC LIMIT ?'),
      outboxRecord: db.prepare('SELECT * FROM sync_outbox WHERE id = ?'),
      // Rejoining after a restore (sync/store/rejoin.ts): the outbox past the cursor is rebuilt in the central's order.
      deleteOutboxAfter: db.prepare('DELETE FROM sync_outbox WHERE seq > ?'),
      insertOutboxAt: db.prepare(
        'INSERT INTO sync_outbox (seq, id, account_id, live_mode, kind, payload, created_at) VALUES (@seq, @id, @account_id, @live_mode, @kind, @payload, @created_at)',
      ),
      outboxSequence: db.prepare("SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'sync_outbox'), 0) AS m"),
      // Reconciliation reads the facts of one day; totals per kind are computed by their registered rule.
      outboxDay: db.prepare(
        `SELECT account_id, live_mode, kind, payload FROM sync_outbox
         WHERE created_at >= ? AND created_at < ? AND kind NOT IN ('event', 'reconciliation_report')`,
      ),
      storeEventsDay: db.prepare(
        `SELECT account_id, live_mode, '' AS currency, 'events' AS measure, count(*) AS count, 0 AS sum
         FROM events WHERE created_at >= ? AND created_at < ? GROUP BY account_id, live_mode`,
      ),
      upsertReconciliation: db.prepare(
        `INSERT INTO sync_reconciliations (account_id, live_mode, day, currency, measure, store_count, store_sum, central_count, central_sum, checked_at)
         VALUES (@account_id, @live_mode, @day, @currency, @measure, @store_count, @store_sum, @central_count, @central_sum, @checked_at)
         ON CONFLICT (account_id, live_mode, day, currency, measure) DO UPDATE SET store_count = excluded.store_count,
           store_sum = excluded.store_sum, central_count = excluded.central_count, central_sum = excluded.central_sum,
           checked_at = excluded.checked_at`,
      ),
      deleteReconciliationDay: db.prepare('DELETE FROM sync_reconciliations WHERE day = ?'),
      reconciliationDiffs: db.prepare(
        `SELECT * FROM sync_reconciliations WHERE store_count <> central_count OR store_sum <> central_sum ORDER BY day, account_id, measure`,
      ),
      lastReconciled: db.prepare('SELECT max(checked_at) AS at FROM sync_reconciliations'),
      openOutage: db.prepare('INSERT OR IGNORE INTO outage_windows (link, started_at) VALUES (?, ?)'),
      closeOutage: db.prepare('UPDATE outage_windows SET ended_at = ? WHERE link = ? AND ended_at IS NULL'),
      // Windows that overlap [from, until): started before its end, and still open or ended after its start.
      outagesBetween: db.prepare('SELECT * FROM outage_windows WHERE started_at < @until AND (ended_at IS NULL OR ended_at > @from) ORDER BY started_at, seq'),
      openOutages: db.prepare('SELECT * FROM outage_windows WHERE ended_at IS NULL ORDER BY started_at'),
      unreportedOutages: db.prepare('SELECT * FROM outage_windows WHERE ended_at IS NOT NULL AND reported = 0 ORDER BY seq LIMIT ?'),
      markOutageReported: db.prepare('UPDATE outage_windows SET reported = 1 WHERE seq = ? AND ended_at IS NOT NULL AND reported = 0'),
    };
  }

  /** Opens a window for `link` unless one is open (then it keeps its first start). */
  openOutage(link: OutageLink, at: string): void {
    this.s.openOutage.run(link, at);
  }
  /** Closes the open window of `link`, if any; returns whether one was open. */
  closeOutage(link: OutageLink, at: string): boolean {
    return this.s.closeOutage.run(at, link).changes > 0;
  }
  outagesBetween(from: string, until: string): OutageWindowRow[] {
    return this.s.outagesBetween.all({ from, until }) as OutageWindowRow[];
  }
  openOutages(): OutageWindowRow[] {
    return this.s.openOutages.all() as OutageWindowRow[];
  }
  /** Ended windows whose `outage_window` record is not in the outbox yet, oldest first. */
  unreportedOutages(limit: number): OutageWindowRow[] {
    return this.s.unreportedOutages.all(limit) as OutageWindowRow[];
  }
  /** Marks an ended window reported (its record written in the same transaction); false if it was already. */
  markOutageReported(seq: number): boolean {
    return this.s.markOutageReported.run(seq).changes > 0;
  }
  outboxAfter(seq: number, limit: number): OutboxRow[] {
    return this.s.outboxAfter.all(seq, limit) as OutboxRow[];
  }
  waiting(afterSeq: number): { n: number; oldest: string | null; last: number | null } {
    return this.s.waiting.get(afterSeq) as { n: number; oldest: string | null; last: number | null };
  }
  maxOutboxSeq(): number {
    return (this.s.maxSeq.get() as { m: number }).m;
  }
  lastSeqBefore(at: string): number {
    return (this.s.lastSeqBefore.get(at) as { m: number }).m;
  }
  insertDecision(d: { record_id: string; account_id: string; live_mode: number; kind: string; reason: string; decided_at: string }): void {
    this.s.insertDecision.run(d.record_id, d.account_id, d.live_mode, d.kind, d.reason, d.decided_at);
  }
  latestDecisions(limit: number): Array<{ record_id: string; kind: string; reason: string; decided_at: string }> {
    return this.s.latestDecisions.all(limit) as Array<{ record_id: string; kind: string; reason: string; decided_at: string }>;
  }
  decisionCount(): number {
    return (this.s.decisionCount.get() as { n: number }).n;
  }
  /** A record of this box's own outbox (the store reads back what the central refused). */
  outboxRecord(id: string): OutboxRow | undefined {
    return this.s.outboxRecord.get(id) as OutboxRow | undefined;
  }
  /** Removes the outbox past `seq` (a rejoin puts it back in the central's order, in the same transaction). */
  deleteOutboxAfter(seq: number): void {
    this.s.deleteOutboxAfter.run(seq);
  }
  /** A record at a given seq (`seq: null`: the next one, past every seq this outbox ever used). */
  insertOutboxAt(row: Omit<OutboxRow, 'seq'> & { seq: number | null }): number {
    return Number(this.s.insertOutboxAt.run(row).lastInsertRowid);
  }
  /** The highest seq this outbox ever handed out (AUTOINCREMENT's high-water mark): the next record takes the one after. */
  outboxSequence(): number {
    return (this.s.outboxSequence.get() as { m: number }).m;
  }
  storeFacts(from: string, until: string): FactRow[] {
    return this.s.outboxDay.all(from, until) as FactRow[];
  }
  storeEvents(from: string, until: string): CountSum[] {
    return this.s.storeEventsDay.all(from, until) as CountSum[];
  }
  replaceReconciliationDay(day: string, rows: ReconciliationRow[]): void {
    this.s.deleteReconciliationDay.run(day);
    for (const r of rows) this.s.upsertReconciliation.run(r);
  }
  reconciliationDiffs(): ReconciliationRow[] {
    return this.s.reconciliationDiffs.all() as ReconciliationRow[];
  }
  lastReconciled(): string | null {
    return (this.s.lastReconciled.get() as { at: string | null }).at;
  }
}

export const storeSide = perDb((db) => new StoreSideStore(db));

/** Every outage window this box recorded (link, start, end), oldest first: its outage history. */
export function outageHistory(db: Db): Array<{ link: string; started_at: string; ended_at: string | null }> {
  return db.prepare('SELECT link, started_at, ended_at FROM outage_windows ORDER BY started_at, seq').all() as Array<{
    link: string;
    started_at: string;
    ended_at: string | null;
  }>;
}
