import { join } from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startPgCluster, type PgCluster } from '../../helpers/pg-cluster.js';
import { until } from '../helpers.js';
import { killStarted, peek, posd, removeTempDirs, requireBuild, startDaemonProcess, tempDir, type DaemonProcess } from '../e2e/processes.js';
import { createPool, migrate } from '../../../src/sync/pg/index.js';
import type { PushRecord } from '../../../src/sync/shared/wire.js';
import { tailEvents } from '../../../src/sync/store/push.js';
import { forgedCashSale, wireRecord, type OutboxRow } from '../wire-records.js';

// Issue 32 at a chain on PostgreSQL: a hostile box pushing through a central-front is refused
// exactly as at a single SQLite central (the same receipt checks, src/sync/central/checks/receipt.ts):
// each bad record answered `rejected` with its code and field, kept as `rejected` in PostgreSQL and
// at the core, never applied, told to the box in its feed, logged per store by the front; a seq
// past the bound refused whole with 400 naming the field; and the box's next honest records applied.

const STORE = 'st_front_hostile';
let cluster: PgCluster;
let pool: pg.Pool;
let url: string;
let coreDir: string;
let accountId: string;
let key: string;
let core: DaemonProcess | undefined;
let front: DaemonProcess | undefined;
let frontLog = '';
/** The real store box's records (an honest cash sale and its event). */
let honest: PushRecord[] = [];
let template: PushRecord;

async function call(method: 'GET' | 'POST', base: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await request(`${base}${path}`, {
    method,
    headers: { 'x-secret-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

let seq = 0;
/** Pushes records through the front, chained after the store's last received seq. */
async function pushThroughFront(recs: Array<Omit<PushRecord, 'seq' | 'prev_seq'>>) {
  const body = { protocol: 1, store_id: STORE, records: recs.map((r, i) => ({ ...r, seq: seq + i + 1, prev_seq: seq + i })) };
  const res = await call('POST', front!.url, '/sync/push', body);
  if (res.status === 200) seq += recs.length;
  return res;
}

let n = 0;
/** A cash sale like the box's own under fresh ids, with `change` applied to its payload. */
function cashSale(change?: (p: Record<string, any>) => void, over: Partial<PushRecord> = {}): Omit<PushRecord, 'seq' | 'prev_seq'> {
  return forgedCashSale(template, 'fronthostile', ++n, change, over);
}

const coreMoney = () =>
  peek(coreDir, (db) => ({
    ledger: db.prepare('SELECT * FROM balance_transactions ORDER BY id').all(),
    intents: db.prepare("SELECT id FROM intents WHERE id LIKE 'int_fronthostile%'").all(),
  }));

beforeAll(async () => {
  requireBuild();
  cluster = await startPgCluster();
  url = cluster.url();
  pool = createPool({ ...cluster.config(), max: 2 });
  await migrate(pool);
  coreDir = tempDir('posd-core-');
  const inst = await posd(['init', '--role', 'central', '--name', 'Chain', '--json', '--data', coreDir]);
  accountId = (await posd(['accounts', 'create', '--name', 'Store 9', '--organization', inst.organization_id, '--json', '--data', coreDir])).account_id;
  key = (await posd(['keys', 'create', '--account', accountId, '--env', 'live', '--json', '--data', coreDir])).key;
  core = await startDaemonProcess(coreDir, { role: 'central', limits: { per_key_per_second: 100_000 }, sync: { postgres: { url, pool_max: 4 } } });
  front = await startDaemonProcess(tempDir('posd-front-'), {
    role: 'central-front',
    limits: { per_key_per_second: 100_000 },
    sync: { postgres: { url, pool_max: 4 } },
  });
  front.child.stdout!.on('data', (d) => (frontLog += d));
  // A real store box sells once, offline; its outbox is the honest records and the template.
  const storeDir = tempDir('posd-store-');
  await posd(['init', '--central-url', core.url, '--central-key', key, '--json', '--data', storeDir]);
  const store = await startDaemonProcess(storeDir, { role: 'store', sync: { central_url: 'http://127.0.0.1:9', reconcile_interval_ms: 0 } });
  expect((await call('POST', store.url, '/api/cash_sales', { amount_in_cents: 1500, currency: 'GTQ' })).status).toBe(201);
  await store.kill('SIGTERM');
  const storeDb = new Database(join(storeDir, 'posd.db'));
  tailEvents(storeDb);
  storeDb.close();
  const outbox = peek(storeDir, (db) => db.prepare('SELECT * FROM sync_outbox ORDER BY seq').all() as Array<Record<string, any>>);
  honest = outbox.map((r) => ({ seq: 0, prev_seq: 0, ...wireRecord(r as OutboxRow) }));
  template = honest.find((r) => r.kind === 'cash_sale')!;
  // The front knows the key once the core has published its read models.
  await until('the core published the key', async () => (await pool.query('SELECT count(*)::int AS n FROM sync_keys')).rows[0].n > 0, 30_000);
}, 120_000);

afterAll(async () => {
  await front?.kill('SIGTERM');
  await core?.kill('SIGTERM');
  await killStarted();
  await pool?.end();
  await cluster?.stop();
  removeTempDirs();
});

describe('a hostile box pushing through a central-front', () => {
  test('each class of bad record is refused as at a single central; nothing moves; the next honest records apply', async () => {
    const cases: Array<[string, Omit<PushRecord, 'seq' | 'prev_seq'>, string, string]> = [
      ['1e15 cents', cashSale((p) => (p.sale.amount_in_cents = 1e15)), 'amount_out_of_range', 'payload.sale.amount_in_cents'],
      ['2^53+1 cents', cashSale((p) => (p.sale.amount_in_cents = 2 ** 53 + 2)), 'amount_out_of_range', 'payload.sale.amount_in_cents'],
      ['currency XXX', cashSale((p) => (p.sale.currency = 'XXX')), 'invalid_currency', 'payload.sale.currency'],
      ['negative', cashSale((p) => (p.sale.amount_in_cents = -1500)), 'amount_out_of_range', 'payload.sale.amount_in_cents'],
      ['12.5', cashSale((p) => (p.sale.amount_in_cents = 12.5)), 'amount_out_of_range', 'payload.sale.amount_in_cents'],
      ['a day in the future', cashSale(() => {}, { created_at: new Date(Date.now() + 86_400_000).toISOString() }), 'record_in_future', 'created_at'],
      ['before the account existed', cashSale(() => {}, { created_at: '2001-01-01T00:00:00.000Z' }), 'record_before_join', 'created_at'],
      ['without its sale', cashSale((p) => delete p.sale), 'invalid_payload', 'payload.sale'],
    ];
    const before = coreMoney();
    // One batch: a refusal at receipt refuses the record, not the push; the stream goes on.
    const res = await pushThroughFront(cases.map(([, r]) => r));
    expect(res.status).toBe(200);
    expect(res.body.applied).toBe(cases.length);
    expect(res.body.rejected).toEqual(cases.map(([, r, code, field]) => ({ id: r.id, code, field, reason: expect.any(String) })));
    const pgRows = (await pool.query('SELECT id, outcome, reason FROM sync_received WHERE store_id = $1 ORDER BY seq', [STORE])).rows;
    // The front's log lines reach its stdout on their own time, not before its answer.
    const logged = (id: string) => new RegExp(`"event":"sync.record_rejected".*"store_id":"${STORE}".*"record_id":"${id}"`).test(frontLog);
    await until('the front logged every refusal', () => cases.every(([, r]) => logged(r.id)), 10_000).catch(() => undefined);
    for (const [i, [what, , code, field]] of cases.entries()) {
      expect(pgRows[i].outcome, what).toBe('rejected');
      expect(pgRows[i].reason, what).toContain(`${code} (${field})`);
      // One log line per refused record, naming the store.
      expect(frontLog, what).toMatch(new RegExp(`"event":"sync.record_rejected".*"store_id":"${STORE}".*"record_id":"${cases[i][1].id}"`));
    }
    expect((await pool.query('SELECT rejected_count FROM sync_stores WHERE store_id = $1', [STORE])).rows[0].rejected_count).toBe(cases.length);

    // The core takes the front's decision: kept as rejected (never applied), and the box told in its feed.
    await until(
      'the core copied the records',
      async () =>
        peek(coreDir, (db) => db.prepare('SELECT count(*) AS n FROM sync_received WHERE store_id = ?').get(STORE) as { n: number }).n === cases.length,
      30_000,
    );
    await until(
      'PostgreSQL says the store is applied up to its last record',
      async () => (await pool.query('SELECT applied_seq FROM sync_stores WHERE store_id = $1', [STORE])).rows[0].applied_seq === seq,
      30_000,
    );
    peek(coreDir, (db) => {
      const rows = db.prepare('SELECT id, outcome, reason FROM sync_received WHERE store_id = ? ORDER BY seq').all(STORE) as Array<{
        id: string;
        outcome: string;
        reason: string;
      }>;
      expect(rows.map((r) => r.outcome)).toEqual(cases.map(() => 'rejected'));
      for (const [i, [what, r, code, field]] of cases.entries()) {
        expect(rows[i].reason, what).toContain(`${code} (${field})`);
        const told = db.prepare("SELECT payload, to_store_id FROM sync_feed WHERE kind = 'record_rejected' AND object_id = ?").all(r.id) as Array<{
          payload: string;
          to_store_id: string;
        }>;
        expect(told, what).toHaveLength(1);
        expect(JSON.parse(told[0].payload), what).toMatchObject({ code, field, store_id: STORE });
        expect(told[0].to_store_id).toBe(STORE);
      }
      expect((db.prepare('SELECT rejected_count FROM sync_stores WHERE store_id = ?').get(STORE) as { rejected_count: number }).rejected_count).toBe(
        cases.length,
      );
    });
    // The refusal reaches the box through the front's feed (the core relays its feed to PostgreSQL).
    await until(
      'the front feeds the refusals',
      async () => {
        const feed = await call('GET', front!.url, `/sync/feed?after=0&store_id=${STORE}&limit=5000`);
        return (feed.body.changes as Array<{ kind: string }>).filter((c) => c.kind === 'record_rejected').length === cases.length;
      },
      30_000,
    );
    expect(coreMoney()).toEqual(before);

    // A seq past the received one + batch + the rejoin allowance is refused whole, naming the field; nothing kept.
    const far = cashSale();
    const wedge = await call('POST', front!.url, '/sync/push', { protocol: 1, store_id: STORE, records: [{ ...far, seq: seq + 2_000_000, prev_seq: seq }] });
    expect(wedge.status).toBe(400);
    expect(wedge.body.errors).toHaveProperty('records.0.seq');
    expect((await pool.query('SELECT count(*)::int AS n FROM sync_received WHERE id = $1', [far.id])).rows[0].n).toBe(0);

    // The box's next honest records are received and applied.
    const ok = await pushThroughFront(honest.map(({ seq: _s, prev_seq: _p, ...r }) => r));
    expect(ok.status).toBe(200);
    expect(ok.body.rejected).toEqual([]);
    await until(
      'the honest records applied at the core',
      async () => (await pool.query('SELECT applied_seq FROM sync_stores WHERE store_id = $1', [STORE])).rows[0].applied_seq === seq,
      30_000,
    );
    const outcomes = (await pool.query('SELECT outcome, count(*)::int AS n FROM sync_received WHERE store_id = $1 GROUP BY outcome ORDER BY outcome', [STORE]))
      .rows;
    expect(outcomes).toEqual([
      { outcome: 'applied', n: honest.length },
      { outcome: 'rejected', n: cases.length },
    ]);
    peek(coreDir, (db) =>
      expect(
        (db.prepare('SELECT count(*) AS n FROM intents WHERE id = ?').get((template.payload as { sale: { id: string } }).sale.id) as { n: number }).n,
      ).toBe(1),
    );
  }, 90_000);
});

describe("a store's outage windows at a chain on PostgreSQL", () => {
  test('checked at the front and at the core as at a single central, kept by the core, read from its API', async () => {
    const t = (minAgo: number) => new Date(Date.now() - minAgo * 60_000).toISOString();
    const win = (i: string, payload: Record<string, unknown>): Omit<PushRecord, 'seq' | 'prev_seq'> => ({
      id: `sync_frontoutage${i}`,
      kind: 'outage_window',
      account_id: accountId,
      live_mode: true,
      payload: { link: 'processor', started_at: t(30), ended_at: t(20), taken_offline: [], ...payload },
      created_at: new Date().toISOString(),
    });
    const taken = { terminal_id: 'trm_front1', account_id: accountId, live_mode: true, currency: 'GTQ', count: 3, amount_in_cents: 4500 };
    const honestWindow = win('1', { taken_offline: [taken] });
    const atReceipt = win('2', { started_at: t(15), ended_at: t(12), taken_offline: [{ ...taken, count: 1e9 }] });
    const atProjection = win('3', { started_at: t(25), ended_at: t(10) });
    const res = await pushThroughFront([honestWindow, atReceipt, atProjection]);
    expect(res.status).toBe(200);
    // The front refuses what needs no state; the core what overlaps the window it applied just before.
    expect(res.body.rejected).toEqual([{ id: atReceipt.id, code: 'invalid_payload', field: 'payload.taken_offline.0.count', reason: expect.any(String) }]);
    await until(
      'the core projected the windows',
      async () => (await pool.query('SELECT applied_seq FROM sync_stores WHERE store_id = $1', [STORE])).rows[0].applied_seq === seq,
      30_000,
    );
    peek(coreDir, (db) => {
      const outcome = (id: string) => db.prepare('SELECT outcome, reason FROM sync_received WHERE id = ?').get(id) as { outcome: string; reason: string };
      expect(outcome(honestWindow.id).outcome).toBe('applied');
      expect(outcome(atProjection.id)).toEqual({ outcome: 'rejected', reason: expect.stringContaining('inconsistent_payload (payload.started_at)') });
      expect(db.prepare('SELECT origin_store_id, link, started_at, ended_at FROM central_outage_windows').all()).toEqual([
        {
          origin_store_id: STORE,
          link: 'processor',
          started_at: (honestWindow.payload as { started_at: string }).started_at,
          ended_at: (honestWindow.payload as { ended_at: string }).ended_at,
        },
      ]);
    });
    const reports = await call('GET', core!.url, `/api/outage_reports?store_id=${STORE}`);
    expect(reports.status).toBe(200);
    expect(reports.body.outages).toEqual([
      expect.objectContaining({ store_id: STORE, links: [expect.objectContaining({ link: 'processor' })], taken_offline: [taken], open_checkouts: null }),
    ]);
  }, 90_000);
});
