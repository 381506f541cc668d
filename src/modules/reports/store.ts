import type { Db } from '../../db/database.js';

export interface ReportRunRow {
  id: string;
  account_id: string;
  live_mode: number;
  report_type: string;
  status: 'pending' | 'running' | 'succeeded' | 'failed';
  parameters: string;
  file_name: string | null;
  size_bytes: number | null;
  sha256: string | null;
  row_count: number | null;
  error: string | null;
  boot_id: string | null;
  created_at: string;
  started_at: string | null;
  succeeded_at: string | null;
  failed_at: string | null;
}

/** All SQL of report runs. */
export class ReportsStore {
  private readonly s;

  constructor(db: Db) {
    const scope = 'account_id IN (SELECT value FROM json_each(@ids)) AND live_mode = @live';
    this.s = {
      insert: db.prepare(
        `INSERT INTO report_runs (id, account_id, live_mode, report_type, status, parameters, created_at)
         VALUES (@id, @account_id, @live_mode, @report_type, 'pending', @parameters, @created_at)`,
      ),
      get: db.prepare('SELECT * FROM report_runs WHERE id = ?'),
      list: db.prepare(`SELECT * FROM report_runs WHERE ${scope} ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`),
      count: db.prepare(`SELECT count(*) AS n FROM report_runs WHERE ${scope}`),
      nextPending: db.prepare("SELECT * FROM report_runs WHERE status = 'pending' ORDER BY created_at, rowid LIMIT 1"),
      start: db.prepare("UPDATE report_runs SET status = 'running', boot_id = @boot, started_at = @at WHERE id = @id AND status = 'pending'"),
      succeed: db.prepare(
        `UPDATE report_runs SET status = 'succeeded', file_name = @file_name, size_bytes = @size_bytes, sha256 = @sha256,
           row_count = @row_count, succeeded_at = @at, error = NULL WHERE id = @id AND status = 'running'`,
      ),
      fail: db.prepare("UPDATE report_runs SET status = 'failed', error = @error, failed_at = @at WHERE id = @id AND status = 'running'"),
      // Back in the queue: a run a stopped process left running, or a succeeded one whose file vanished.
      requeue: db.prepare(
        `UPDATE report_runs SET status = 'pending', boot_id = NULL, started_at = NULL, file_name = NULL, size_bytes = NULL,
           sha256 = NULL, row_count = NULL, succeeded_at = NULL WHERE id = ? AND status IN ('running', 'succeeded')`,
      ),
      // Runs a previous process left half-written go back in the queue.
      orphans: db.prepare("SELECT id FROM report_runs WHERE status = 'running' AND (boot_id IS NULL OR boot_id <> ?)"),
    };
  }

  insert(row: Pick<ReportRunRow, 'id' | 'account_id' | 'live_mode' | 'report_type' | 'parameters' | 'created_at'>): void {
    this.s.insert.run(row);
  }
  get(id: string): ReportRunRow | undefined {
    return this.s.get.get(id) as ReportRunRow | undefined;
  }
  list(ids: string[], live: boolean, limit: number, offset: number): { rows: ReportRunRow[]; total: number } {
    const p = { ids: JSON.stringify(ids), live: live ? 1 : 0 };
    return {
      rows: this.s.list.all({ ...p, limit, offset }) as ReportRunRow[],
      total: (this.s.count.get(p) as { n: number }).n,
    };
  }
  nextPending(): ReportRunRow | undefined {
    return this.s.nextPending.get() as ReportRunRow | undefined;
  }
  start(id: string, boot: string, at: string): boolean {
    return this.s.start.run({ id, boot, at }).changes === 1;
  }
  succeed(r: { id: string; file_name: string; size_bytes: number; sha256: string; row_count: number; at: string }): boolean {
    return this.s.succeed.run(r).changes === 1;
  }
  fail(id: string, error: string, at: string): boolean {
    return this.s.fail.run({ id, error, at }).changes === 1;
  }
  requeue(id: string): boolean {
    return this.s.requeue.run(id).changes === 1;
  }
  orphans(bootId: string): string[] {
    return (this.s.orphans.all(bootId) as Array<{ id: string }>).map((r) => r.id);
  }
}
