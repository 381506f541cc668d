import type Database from 'better-sqlite3';
import type { Db } from './database.js';
import { perDb } from './per-db.js';

/**
 * A list's Total-Count read from `list_counts` (baseline.sql), which each listed table's triggers
 * keep in the transaction that writes its rows: one row read per account instead of a count of
 * the table, so the count costs the same at 1,000,000 rows as at 100 (issue 38). `key` is '' for
 * every row of the list, or the status the list's only filter asks for.
 */
export function listCount(db: Db, list: string, accountIds: readonly string[], liveMode: boolean, key = ''): number {
  return (statements(db).sum.get(list, JSON.stringify(accountIds), liveMode ? 1 : 0, key) as { n: number | null }).n ?? 0;
}

const statements = perDb((db) => ({
  sum: db.prepare('SELECT sum(n) AS n FROM list_counts WHERE list = ? AND account_id IN (SELECT value FROM json_each(?)) AND live_mode = ? AND key = ?'),
}));

/**
 * Prepared statements by their text, for lists whose WHERE is built from the filters a request
 * gives (a clause per given filter, so the planner can pick the index serving it): each shape is
 * prepared once per connection.
 */
export function statementCache(db: Db): (sql: string) => Database.Statement {
  const made = new Map<string, Database.Statement>();
  return (sql) => {
    let stmt = made.get(sql);
    if (!stmt) made.set(sql, (stmt = db.prepare(sql)));
    return stmt;
  };
}
