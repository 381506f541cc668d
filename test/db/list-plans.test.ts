import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { openDatabase } from '../../src/db/database.js';
import { checkoutsStore } from '../../src/modules/checkouts/store.js';
import { customersStore } from '../../src/modules/customers/store.js';
import { ledgerStore } from '../../src/modules/ledger/store.js';
import { listEvents } from '../../src/events/feed.js';

/**
 * Issue 38: a list's first page costs the same at 1,000,000 rows as at 100. Deterministic, not
 * timed: every SELECT a list runs (its page and its Total-Count) is planned by SQLite, and the plan
 * must search an index (no SCAN of a table, no temporary b-tree to sort the page). Without
 * sqlite_stat1 the planner does not look at row counts, so an empty file plans as a full one.
 */

let running: string[] | null = null;

/**
 * Records the text of every SELECT run on `db` while `run()` is in progress: stores prepare their
 * statements once per connection, so each statement is wrapped as it is prepared.
 */
function recordSelects(db: Db): void {
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    const stmt = prepare(sql);
    if (!/^\s*SELECT/i.test(sql)) return stmt;
    for (const method of ['all', 'get'] as const) {
      const original = stmt[method].bind(stmt) as (...args: unknown[]) => unknown;
      (stmt as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
        running?.push(sql);
        return original(...args);
      };
    }
    return stmt;
  }) as Db['prepare'];
}

function selectsOf(run: () => void): string[] {
  running = [];
  try {
    run();
    return [...new Set(running)];
  } finally {
    running = null;
  }
}

function planOf(db: Db, sql: string): string[] {
  const named = Object.fromEntries([...sql.matchAll(/@(\w+)/g)].map((m) => [m[1], m[1] === 'limit' ? 10 : m[1] === 'offset' ? 0 : 'x']));
  const positional = (sql.match(/\?/g) ?? []).map(() => 1);
  const stmt = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
  const rows = (Object.keys(named).length ? stmt.all(named) : stmt.all(...positional)) as Array<{ detail: string }>;
  return rows.map((r) => r.detail);
}

function expectIndexed(db: Db, selects: string[], table: string): void {
  const lists = selects.filter((s) => new RegExp(`FROM ${table}\\b`).test(s) || /FROM list_counts/.test(s));
  expect(lists.length).toBeGreaterThan(0);
  for (const sql of lists) {
    const plan = planOf(db, sql);
    // A SCAN of json_each is the list of accounts a statement is given, not a table.
    expect(
      plan.filter((d) => /^SCAN (?!json_each)/.test(d) || /TEMP B-TREE/.test(d)),
      `${sql}\n${plan.join('\n')}`,
    ).toEqual([]);
    expect(
      plan.some((d) => /^SEARCH \w+ USING (COVERING )?(INDEX|PRIMARY KEY)/.test(d)),
      `${sql}\n${plan.join('\n')}`,
    ).toBe(true);
  }
}

describe("each list's first page and Total-Count use an index", () => {
  const db = openDatabase(':memory:');
  recordSelects(db);

  it('GET /checkouts, with and without ?status=', () => {
    const selects = selectsOf(() => {
      checkoutsStore(db).list(['acct_1'], false, 10, 0);
      checkoutsStore(db).list(['acct_1'], false, 10, 0, { status: 'paid' });
      checkoutsStore(db).list(['acct_1'], false, 10, 0, { from: '2026-01-01T00:00:00.000Z', until: '2026-02-01T00:00:00.000Z' });
    });
    expectIndexed(db, selects, 'checkouts');
    // The unfiltered and status counts come from the counters, not from the table.
    expect(selects.filter((s) => /count\(\*\) AS n FROM checkouts/.test(s))).toHaveLength(1);
  });

  it('GET /balance_transactions', () => {
    const selects = selectsOf(() => ledgerStore(db).list({ accountIds: ['acct_1'], liveMode: false }, 10, 0));
    expectIndexed(db, selects, 'balance_transactions');
    expect(selects.some((s) => /count\(\*\)/.test(s))).toBe(false);
  });

  it('GET /activities (the events outbox)', () => {
    const selects = selectsOf(() => listEvents(db, { accountIds: ['acct_1'], liveMode: true, limit: 10, offset: 0 }));
    expectIndexed(db, selects, 'events');
    expect(selects.some((s) => /count\(\*\)/.test(s))).toBe(false);
  });

  it('GET /customers, in each environment', () => {
    const selects = selectsOf(() => {
      customersStore(db).list(['acct_1'], true, 10, 0);
      customersStore(db).list(['acct_1'], false, 10, 0);
    });
    expectIndexed(db, selects, 'customers');
    expect(selects.some((s) => /count\(\*\)/.test(s))).toBe(false);
  });
});

describe('the counters agree with the rows', () => {
  it('after inserts, status and environment changes and deletes', () => {
    const db = openDatabase(':memory:');
    const checkout = db.prepare(
      "INSERT INTO checkouts (id, account_id, live_mode, status, amount_in_cents, currency, items, created_at, updated_at) VALUES (?, ?, ?, ?, 1, 'GTQ', '[]', ?, ?)",
    );
    const customer = db.prepare('INSERT INTO customers (id, account_id, live_mode, merchant_id, email, created_at) VALUES (?, ?, ?, ?, ?, ?)');
    for (let i = 0; i < 40; i++) {
      const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
      checkout.run(`chk_${i}`, i % 3 ? 'acct_1' : 'acct_2', i % 2, i % 4 ? 'open' : 'paid', at, at);
      customer.run(`cus_${i}`, i % 3 ? 'acct_1' : 'sbx_1', i % 5 ? 0 : 1, 'acct_1', `c${i}@example.com`, at);
    }
    db.prepare("UPDATE checkouts SET status = 'paid' WHERE id IN ('chk_1', 'chk_2', 'chk_5')").run();
    db.prepare("UPDATE checkouts SET account_id = 'acct_2' WHERE id = 'chk_7'").run();
    db.prepare("DELETE FROM checkouts WHERE id IN ('chk_3', 'chk_4')").run();
    db.prepare("UPDATE customers SET live_mode = 1, account_id = merchant_id WHERE id IN ('cus_1', 'cus_3')").run();
    db.prepare("UPDATE customers SET account_id = 'acct_1' WHERE id = 'cus_6'").run();
    db.prepare("DELETE FROM customers WHERE id IN ('cus_8', 'cus_10')").run();
    const count = (sql: string, ...args: unknown[]) => (db.prepare(sql).get(...args) as { n: number }).n;
    for (const accounts of [['acct_1'], ['acct_2'], ['acct_1', 'acct_2']]) {
      for (const live of [false, true]) {
        const ids = JSON.stringify(accounts);
        const where = 'account_id IN (SELECT value FROM json_each(?)) AND live_mode = ?';
        expect(checkoutsStore(db).list(accounts, live, 10, 0).total).toBe(count(`SELECT count(*) AS n FROM checkouts WHERE ${where}`, ids, +live));
        for (const status of ['open', 'paid']) {
          expect(checkoutsStore(db).list(accounts, live, 10, 0, { status }).total).toBe(
            count(`SELECT count(*) AS n FROM checkouts WHERE ${where} AND status = ?`, ids, +live, status),
          );
        }
      }
    }
    for (const live of [false, true]) {
      const scope = 'CASE WHEN ? = 1 THEN live_mode = 1 OR account_id = merchant_id ELSE live_mode = 0 END';
      const expected = count(`SELECT count(*) AS n FROM customers WHERE merchant_id = 'acct_1' AND (${scope})`, +live);
      expect(expected).toBeGreaterThan(0);
      expect(customersStore(db).list(['acct_1'], live, 10, 0).total).toBe(expected);
    }
    db.close();
  });
});
