import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';

/** Limits are rounded up to a multiple of this: one statement per step, rows past the limit dropped. */
const STEP = 16;
/** Past this, the limit is bound (`LIMIT ?`): rare calls, where a new plan each run costs little. */
const MOST_WRITTEN = 4096;

/**
 * `all()` of a statement ending in `LIMIT n` for a hot path, the limit written into the SQL instead
 * of bound. SQLite (3.54, as better-sqlite3 builds it) marks a bound LIMIT so that every new binding
 * prepares the statement again (`sqlite3ExprIsInteger` → `sqlite3VdbeReprepareOnBind`): about 15 µs
 * a run on the daemon's schema, more than reading 64 rows (decision 0263). `sql` ends with the
 * word LIMIT; a limit over 1 is rounded up to a multiple of 16, one statement per step prepared at
 * its first use, and the rows past `limit` are dropped. Only for an order that an index gives (no
 * sort of everything that matches), as with any LIMIT.
 */
export function limitedAll<P extends unknown[], R>(db: Db, sql: string): (limit: number, ...params: P) => R[] {
  if (!/\bLIMIT\s*$/i.test(sql)) throw new Error('limitedAll: the SQL must end with LIMIT');
  const byStep = new Map<number, Statement>();
  let bound: Statement | undefined;
  return (limit, ...params) => {
    if (limit <= 0) return [];
    if (limit > MOST_WRITTEN) {
      bound ??= db.prepare(`${sql} ?`);
      return bound.all(...params, limit) as R[];
    }
    const n = limit === 1 ? 1 : Math.ceil(limit / STEP) * STEP;
    let stmt = byStep.get(n);
    if (!stmt) {
      stmt = db.prepare(`${sql} ${n}`);
      byStep.set(n, stmt);
    }
    const rows = stmt.all(...params) as R[];
    if (rows.length > limit) rows.length = limit;
    return rows;
  };
}
