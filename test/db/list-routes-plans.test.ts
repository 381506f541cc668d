import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { openDatabase } from '../../src/db/database.js';
import { listCount } from '../../src/db/list-counts.js';
import { transfersStore } from '../../src/modules/transfers/store.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Issue 38, for every list the API serves: each SELECT a list request runs (its page and its
 * Total-Count) is planned by SQLite on the daemon's own connection, and must search an index
 * (no SCAN of a table, no temporary b-tree to sort the page). The statements are recorded as the
 * stores prepare them (on first use), so each list is asked once with each of its filters.
 */

const LISTS = [
  '/connected_accounts',
  '/activities',
  '/bank_accounts',
  '/services',
  '/staff_members',
  '/resources',
  '/class_sessions',
  '/bookings',
  '/bookings?status=confirmed',
  '/bookings?kind=stay',
  '/checkouts',
  '/contract_templates',
  '/contracts',
  '/coupons',
  '/coupons?status=archived',
  '/customers',
  '/intents',
  '/balance_transactions',
  '/offline_audit',
  '/stored_payments',
  '/products',
  '/report_runs',
  '/subscriptions',
  '/swaps',
  '/terminal_session_commands',
  '/terminals',
  '/transfers',
  '/withdrawals',
  '/withdrawals?status=paid',
  '/transfers?kind=peer',
  '/intents?status=succeeded',
  '/subscriptions?status=active',
  '/terminal_session_commands?status=pending',
  '/users',
  '/webhook_endpoints',
];

/** Lists whose unfiltered (or status-only) Total-Count is read from the counters: no count of the table. */
const COUNTED = new Set([
  '/bookings',
  '/bookings?status=confirmed',
  '/activities',
  '/checkouts',
  '/customers',
  '/intents',
  '/intents?status=succeeded',
  '/balance_transactions',
  '/products',
  '/subscriptions',
  '/subscriptions?status=active',
  '/swaps',
  '/terminal_session_commands',
  '/terminal_session_commands?status=pending',
  '/transfers',
  '/transfers?kind=peer',
  '/withdrawals',
  '/withdrawals?status=paid',
  '/users',
  '/contracts',
  '/contract_templates',
]);

let recording: Set<string> | null = null;

function recordSelects(db: Db): void {
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    const stmt = prepare(sql);
    if (!/^\s*(WITH|SELECT)/i.test(sql)) return stmt;
    for (const method of ['all', 'get', 'iterate', 'pluck'] as const) {
      const original = (stmt as unknown as Record<string, (...a: unknown[]) => unknown>)[method];
      if (typeof original !== 'function') continue;
      (stmt as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
        recording?.add(sql);
        return original.apply(stmt, args);
      };
    }
    return stmt;
  }) as Db['prepare'];
}

function badSteps(db: Db, sql: string): string[] {
  const named = [...new Set([...sql.matchAll(/[@:$](\w+)/g)].map((m) => m[1]))];
  const args = named.length
    ? [Object.fromEntries(named.map((n) => [n, n === 'limit' ? 10 : n === 'offset' ? 0 : 'x']))]
    : (sql.match(/\?/g) ?? []).map(() => '[]');
  const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail);
  return plan.filter((d) => /^SCAN (?!json_each|CONSTANT ROW)/.test(d) || /TEMP B-TREE/.test(d));
}

describe('every list route plans its SELECTs on an index', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    recordSelects(s.daemon.ctx.db);
  });
  afterAll(async () => s?.stop());

  it.each(LISTS)('GET %s', async (path) => {
    recording = new Set();
    const res = await s.api('GET', path);
    const sqls = [...recording];
    recording = null;
    expect(res.status, res.text).toBe(200);
    expect(res.headers['total-count']).toBeDefined();
    const bad = sqls.map((sql) => ({ sql, bad: badSteps(s.daemon.ctx.db, sql) })).filter((x) => x.bad.length);
    expect(bad).toEqual([]);
    if (COUNTED.has(path)) expect(sqls.filter((sql) => /count\(/i.test(sql))).toEqual([]);
  });
});

describe('the counters of the other lists agree with the rows (decision 0270)', () => {
  /**
   * Rows of any shape: every NOT NULL column gets a value of its type (CHECK and foreign keys off),
   * the list's columns are varied; then some rows change status, account or environment and some
   * are deleted, and each counter is compared with a count of the table.
   */
  it.each([
    ['intents', 'intents', 'status'],
    ['users', 'users', null],
    ['swaps', 'swaps', null],
    ['products', 'products', null],
    ['contracts', 'contracts', null],
    ['contract_templates', 'contract_templates', null],
    ['subscriptions', 'subscriptions', 'status'],
    ['terminal_commands', 'terminal_commands', 'status'],
    ['bookings', 'sched_bookings', 'status'],
  ] as const)('%s', (list, table, status) => {
    const db = openDatabase(':memory:');
    db.pragma('foreign_keys = OFF');
    db.pragma('ignore_check_constraints = ON');
    const cols = (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string; type: string; notnull: number; pk: number }>).filter(
      (c) => c.notnull || c.pk || ['account_id', 'live_mode', status].includes(c.name),
    );
    const insert = db.prepare(`INSERT INTO ${table} (${cols.map((c) => c.name).join(', ')}) VALUES (${cols.map((c) => `@${c.name}`).join(', ')})`);
    for (let i = 0; i < 40; i++) {
      const row = Object.fromEntries(
        cols.map((c) => [
          c.name,
          c.name === 'account_id'
            ? `acct_${i % 3}`
            : c.name === 'live_mode'
              ? i % 2
              : c.name === status
                ? ['open', 'done'][i % 4 ? 0 : 1]
                : c.type === 'INTEGER'
                  ? c.pk || c.name === 'receipt_number'
                    ? i + 1
                    : 0
                  : `${c.name}_${i}`,
        ]),
      );
      insert.run(row);
    }
    const key = cols.find((c) => c.pk)!.name;
    const rowKey = (i: number) => (cols.find((c) => c.pk)!.type === 'INTEGER' ? i + 1 : `${key}_${i}`);
    if (status) db.prepare(`UPDATE ${table} SET ${status} = 'done' WHERE ${key} IN (?, ?, ?)`).run(rowKey(1), rowKey(2), rowKey(5));
    db.prepare(`UPDATE ${table} SET account_id = 'acct_0', live_mode = 1 WHERE ${key} = ?`).run(rowKey(7));
    db.prepare(`DELETE FROM ${table} WHERE ${key} IN (?, ?)`).run(rowKey(3), rowKey(4));
    for (const account of ['acct_0', 'acct_1', 'acct_2']) {
      for (const live of [false, true]) {
        const where = `account_id = '${account}' AND live_mode = ${+live}`;
        expect(listCount(db, list, [account], live)).toBe((db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${where}`).get() as { n: number }).n);
        if (status) {
          for (const s of ['open', 'done']) {
            expect(listCount(db, list, [account], live, s)).toBe(
              (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${where} AND ${status} = ?`).get(s) as { n: number }).n,
            );
          }
        }
      }
    }
    db.close();
  });
});

describe('GET /transfers and /withdrawals from the counters and the merged indexes', () => {
  it('give the rows and totals of the general form (several accounts, counted)', () => {
    const db = openDatabase(':memory:');
    db.pragma('foreign_keys = OFF');
    db.pragma('ignore_check_constraints = ON');
    const insert = db.prepare(
      `INSERT INTO transfers (id, account_id, live_mode, kind, status, amount_in_cents, currency, recipient_account_id, bank_account_id, balance_transaction_id, created_at, updated_at)
       VALUES (?, ?, 0, ?, ?, 1, 'GTQ', ?, ?, 'btx', ?, ?)`,
    );
    const statuses = ['succeeded', 'in_review', 'cancelled'];
    for (let i = 0; i < 60; i++) {
      const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i % 50)).toISOString();
      const peer = i % 3 !== 0;
      insert.run(
        `tr_${i}`,
        `acct_${i % 2}`,
        peer ? 'peer' : 'withdrawal',
        peer ? statuses[i % 3] : ['pending', 'paid'][i % 2],
        peer ? `acct_${(i + 1) % 3}` : null,
        peer ? null : 'ba_1',
        at,
        at,
      );
    }
    db.prepare("UPDATE transfers SET status = 'succeeded' WHERE id IN ('tr_1', 'tr_2', 'tr_4')").run();
    db.prepare("UPDATE transfers SET status = 'paid' WHERE id IN ('tr_0', 'tr_6')").run();
    db.prepare("DELETE FROM transfers WHERE id IN ('tr_5', 'tr_9')").run();
    const store = transfersStore(db);
    const filters = [
      { includeIncoming: true },
      { includeIncoming: true, kind: 'peer' as const },
      { includeIncoming: true, kind: 'withdrawal' as const },
      { includeIncoming: false, kind: 'withdrawal' as const },
      { includeIncoming: false, kind: 'withdrawal' as const, status: 'paid' },
      { includeIncoming: false, kind: 'withdrawal' as const, status: 'pending' },
    ];
    let seen = 0;
    for (const account of ['acct_0', 'acct_1', 'acct_2']) {
      for (const f of filters) {
        for (const offset of [0, 7]) {
          const fast = store.list({ accountIds: [account], liveMode: false, ...f }, 10, offset);
          const general = store.list({ accountIds: [account, account], liveMode: false, ...f }, 10, offset);
          expect(fast.total, `${account} ${JSON.stringify(f)}`).toBe(general.total);
          expect(fast.rows.map((r) => r.id)).toEqual(general.rows.map((r) => r.id));
          seen += fast.rows.length;
        }
      }
    }
    expect(seen).toBeGreaterThan(0);
    db.close();
  });
});

describe("an endpoint's deliveries counter", () => {
  it('agrees with its rows after inserts and pruning', () => {
    const db = openDatabase(':memory:');
    db.pragma('foreign_keys = OFF');
    const insert = db.prepare(
      `INSERT INTO webhook_deliveries (account_id, live_mode, endpoint_id, event_id, event_type, event_account_id, status, created_at, updated_at)
       VALUES ('acct_1', 0, ?, ?, 'checkout.paid', 'acct_1', 'succeeded', '2026-01-01', '2026-01-01')`,
    );
    for (let i = 0; i < 30; i++) insert.run(`we_${i % 3}`, `evt_${i}`);
    db.prepare("DELETE FROM webhook_deliveries WHERE endpoint_id = 'we_1' AND seq % 2 = 0").run();
    for (const endpoint of ['we_0', 'we_1', 'we_2']) {
      const rows = (db.prepare('SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ?').get(endpoint) as { n: number }).n;
      expect(listCount(db, 'webhook_deliveries', [endpoint], false)).toBe(rows);
    }
    expect(listCount(db, 'webhook_deliveries', ['we_1'], false)).toBeLessThan(10);
    db.close();
  });
});
