import type { Db } from '../../../db/database.js';

export interface ClassSessionRow {
  id: string;
  account_id: string;
  live_mode: number;
  service_id: string;
  name: string;
  staff_member_id: string | null;
  resource_id: string | null;
  starts_at: string;
  ends_at: string;
  capacity: number;
  cancelled_at: string | null;
  created_at: string;
}

export interface SessionFilter {
  accountIds: string[];
  liveMode: boolean;
  serviceId?: string;
  staffMemberId?: string;
  from?: string;
  to?: string;
  cancelled?: boolean;
}

/** All SQL of class sessions. */
export function classSessionsStore(db: Db) {
  const s = {
    insert: db.prepare(
      `INSERT INTO sched_class_sessions (id, account_id, live_mode, service_id, name, staff_member_id, resource_id, starts_at, ends_at, capacity, cancelled_at, created_at)
       VALUES (@id, @account_id, @live_mode, @service_id, @name, @staff_member_id, @resource_id, @starts_at, @ends_at, @capacity, @cancelled_at, @created_at)`,
    ),
    get: db.prepare('SELECT * FROM sched_class_sessions WHERE id = ?'),
    cancel: db.prepare('UPDATE sched_class_sessions SET cancelled_at = ? WHERE id = ? AND cancelled_at IS NULL'),
  };
  return {
    insert: (row: ClassSessionRow) => s.insert.run(row),
    get: (id: string) => s.get.get(id) as ClassSessionRow | undefined,
    cancel: (id: string, at: string) => s.cancel.run(at, id).changes === 1,
    list(f: SessionFilter, limit: number, offset: number): { rows: ClassSessionRow[]; total: number } {
      const w = [`account_id IN (${f.accountIds.map(() => '?').join(', ') || 'NULL'})`, 'live_mode = ?'];
      const args: unknown[] = [...f.accountIds, f.liveMode ? 1 : 0];
      if (f.serviceId) w.push('service_id = ?'), args.push(f.serviceId);
      if (f.staffMemberId) w.push('staff_member_id = ?'), args.push(f.staffMemberId);
      if (f.from) w.push('starts_at >= ?'), args.push(f.from);
      if (f.to) w.push('starts_at <= ?'), args.push(f.to);
      if (f.cancelled !== undefined) w.push(f.cancelled ? 'cancelled_at IS NOT NULL' : 'cancelled_at IS NULL');
      const clause = w.join(' AND ');
      const rows = db
        .prepare(`SELECT * FROM sched_class_sessions WHERE ${clause} ORDER BY starts_at, id LIMIT ? OFFSET ?`)
        .all(...args, limit, offset) as ClassSessionRow[];
      const total = (db.prepare(`SELECT count(*) AS n FROM sched_class_sessions WHERE ${clause}`).get(...args) as { n: number }).n;
      return { rows, total };
    },
  };
}
export type ClassSessionsStore = ReturnType<typeof classSessionsStore>;
