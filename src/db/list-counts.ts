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

/**
 * The WHERE term naming a list's accounts: `=` for one account (the usual key), so an index
 * starting (account_id, live_mode, <the list's order>) hands out the page in order without a sort;
 * an organization's several accounts keep `json_each` (and the sort that comes with it).
 * `value` is what to bind to `param`.
 */
export function accountTerm(column: string, param: string, accountIds: readonly string[]): { sql: string; value: string } {
  return accountIds.length === 1
    ? { sql: `${column} = ${param}`, value: accountIds[0]! }
    : { sql: `${column} IN (SELECT value FROM json_each(${param}))`, value: JSON.stringify(accountIds) };
}

/**
 * A list statement in both forms of `accountTerm`, each prepared on first use: `make` writes the
 * SQL given how to name the accounts; bind `accountsArg(accountIds)` where it put `param`.
 */
export function accountsStatement(
  db: Db,
  make: (accounts: (column: string, param: string) => string) => string,
): (accountIds: readonly string[]) => Database.Statement {
  let one: Database.Statement | undefined;
  let many: Database.Statement | undefined;
  return (accountIds) =>
    accountIds.length === 1
      ? (one ??= db.prepare(make((column, param) => `${column} = ${param}`)))
      : (many ??= db.prepare(make((column, param) => `${column} IN (SELECT value FROM json_each(${param}))`)));
}

/** What to bind for the accounts of `accountTerm`/`accountsStatement`. */
export function accountsArg(accountIds: readonly string[]): string {
  return accountIds.length === 1 ? accountIds[0]! : JSON.stringify(accountIds);
}
