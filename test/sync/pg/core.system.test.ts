import { cpSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startPgCluster, type PgCluster } from '../../helpers/pg-cluster.js';
import { until } from '../helpers.js';
import { killStarted, peek, posd, removeTempDirs, requireBuild, startDaemonProcess, tempDir, type DaemonProcess } from '../e2e/processes.js';
import { createPool, FeedWaiter, keyByHash, migrate, receivePush, scopeOf, type ReceiptScope } from '../../../src/sync/pg/index.js';
import type { PushRecord } from '../../../src/sync/shared/wire.js';
import { tailEvents } from '../../../src/sync/store/push.js';
import { wireRecord, type OutboxRow } from '../wire-records.js';

// The chain's core (`role: central` with sync.postgres.url) in its own process against a real
// PostgreSQL cluster: records a front would receive (receivePush, then the front's NOTIFY) are
// applied once, in order, and their outcomes, applied_seq and day totals reach PostgreSQL; a core
// SIGKILLed between its SQLite commit and its report converges after a restart; a standby takes
// over; the core's feed and read models reach PostgreSQL.

const SALES = 45;
const STORE = 'st_core_pg';
let cluster: PgCluster;
let pool: pg.Pool;
let url: string;
let coreDir: string;
let standbyDir: string;
let accountId: string;
let organizationId: string;
let key: string;
let core: DaemonProcess | undefined;
let standby: DaemonProcess | undefined;
let records: PushRecord[] = [];
let scope: ReceiptScope;
/** How far the records were received so far (the three parts of the tests, in order). */
let pushed = 0;

// The projector's thread on (sync.postgres.projector_thread): these tests run the core through it.
const coreConfig = () => ({ role: 'central', limits: { per_key_per_second: 100_000 }, sync: { postgres: { url, pool_max: 4, projector_thread: true } } });

async function call(method: 'GET' | 'POST', base: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await request(`${base}${path}`, {
    method,
    headers: { 'x-secret-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

/** Receives records as a front does: the receipt transaction, then the doorbell with the store id. */
async function receive(recs: PushRecord[]): Promise<void> {
  for (let i = 0; i < recs.length; i += 25) await receivePush(pool, scope, { protocol: 1, store_id: STORE, records: recs.slice(i, i + 25) });
  await pool.query("SELECT pg_notify('posd_received', $1)", [STORE]);
  pushed = recs[recs.length - 1].seq;
}

async function pgStore() {
  return (await pool.query('SELECT received_seq, applied_seq, held_count, rejected_count, parked_count FROM sync_stores WHERE store_id = $1', [STORE])).rows[0];
}

const part = (n: number) => {
  // Three parts of the store's records, cut at record boundaries.
  const third = Math.ceil(records.length / 3);
  return records.slice(n * third, (n + 1) * third);
};

/**
 * A `posd` command that writes the core's file: on a chain core only through the central log, so
 * with the core stopped and its configuration (docs/decisions/0230-cli-writes-through-the-log.md);
 * the core is started again after it.
 */
async function whileCoreStopped(args: string[]): Promise<any> {
  await core!.kill('SIGTERM');
  try {
    return await posd([...args, '--data', coreDir, '--config', join(coreDir, 'test-config.json')]);
  } finally {
    core = await startDaemonProcess(coreDir, coreConfig());
  }
}

beforeAll(async () => {
  requireBuild();
  cluster = await startPgCluster();
  url = cluster.url();
  pool = createPool({ ...cluster.config(), max: 4 });
  await migrate(pool);

  coreDir = tempDir('posd-core-');
  const inst = await posd(['init', '--role', 'central', '--name', 'Chain', '--json', '--data', coreDir]);
  organizationId = inst.organization_id;
  accountId = (await posd(['accounts', 'create', '--name', 'Store 7', '--organization', organizationId, '--json', '--data', coreDir])).account_id;
  key = (await posd(['keys', 'create', '--account', accountId, '--env', 'live', '--json', '--data', coreDir])).key;
  // The standby's data folder: a copy of the core's (as a restored backup would be), taken before either runs.
  standbyDir = tempDir('posd-standby-');
  cpSync(coreDir, standbyDir, { recursive: true });

  core = await startDaemonProcess(coreDir, coreConfig());
  // A real store box makes the records: joined to the core, selling offline, its outbox read back.
  const storeDir = tempDir('posd-store-');
  await posd(['init', '--central-url', core.url, '--central-key', key, '--json', '--data', storeDir]);
  const store = await startDaemonProcess(storeDir, {
    role: 'store',
    limits: { per_key_per_second: 100_000 },
    sync: { central_url: 'http://127.0.0.1:9', reconcile_interval_ms: 0 },
  });
  for (let i = 0; i < SALES; i++) expect((await call('POST', store.url, '/api/cash_sales', { amount_in_cents: 100 + i, currency: 'GTQ' })).status).toBe(201);
  await store.kill('SIGTERM');
  // The sales' events reach the outbox when the box's push loop tails them (its retries against the
  // unreachable central): tail whatever is left, as its next push would, so the records hold both.
  const storeDb = new Database(join(storeDir, 'posd.db'));
  tailEvents(storeDb);
  storeDb.close();
  const outbox = peek(storeDir, (db) => db.prepare('SELECT * FROM sync_outbox ORDER BY seq').all() as OutboxRow[]);
  records = outbox.map((r, i) => ({ seq: r.seq, prev_seq: i ? outbox[i - 1].seq : 0, ...wireRecord(r) }));
  const accounts = [...new Map(records.map((r) => [r.account_id, { id: r.account_id, live_mode: r.live_mode }])).values()];
  scope = { keyAccount: { id: accountId, live_mode: true }, accounts };
}, 120_000);

afterAll(async () => {
  await core?.kill('SIGTERM');
  await standby?.kill('SIGTERM');
  await killStarted();
  await pool?.end();
  await cluster?.stop();
  removeTempDirs();
});

describe('the chain core on PostgreSQL', () => {
  test('records received in PostgreSQL are applied at the core once, in order; outcomes, applied_seq and day totals reach PostgreSQL', async () => {
    expect(records.filter((r) => r.kind === 'cash_sale')).toHaveLength(SALES);
    const first = part(0);
    await receive(first);
    await until('PostgreSQL says every received record applied', async () => (await pgStore())?.applied_seq === pushed, 30_000);
    expect(await pgStore()).toMatchObject({ received_seq: pushed, applied_seq: pushed, held_count: 0, rejected_count: 0, parked_count: 0 });
    const outcomes = await pool.query('SELECT outcome, count(*)::int AS n FROM sync_received WHERE store_id = $1 GROUP BY outcome', [STORE]);
    expect(outcomes.rows).toEqual([{ outcome: 'applied', n: first.length }]);
    // A box that reaches the core itself is sent to the fronts: a record received here would be unknown to them.
    const direct = await call('POST', core!.url, '/sync/push', { protocol: 1, store_id: STORE, records: [] });
    expect(direct).toMatchObject({ status: 503, body: { code: 'sync_push_at_core' } });

    const sales = first.filter((r) => r.kind === 'cash_sale').length;
    peek(coreDir, (db) => {
      expect(db.prepare('SELECT outcome, count(*) AS n FROM sync_received WHERE store_id = ? GROUP BY outcome').all(STORE)).toEqual([
        { outcome: 'applied', n: first.length },
      ]);
      expect(db.prepare('SELECT received_seq, applied_seq, account_id FROM sync_stores WHERE store_id = ?').get(STORE)).toEqual({
        received_seq: pushed,
        applied_seq: pushed,
        account_id: accountId,
      });
      expect(db.prepare('SELECT count(*) AS n FROM intents WHERE account_id = ?').get(accountId)).toEqual({ n: sales });
      // Received when the front received it (the status page's lag), in the SQLite central's time format.
      const pgAt = (db.prepare('SELECT received_at FROM sync_received WHERE store_id = ? ORDER BY seq LIMIT 1').get(STORE) as { received_at: string })
        .received_at;
      expect(pgAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Math.abs(Date.now() - Date.parse(pgAt))).toBeLessThan(60_000);
      // In the store's order: the core's copy holds every seq once, as received.
      expect((db.prepare('SELECT seq FROM sync_received WHERE store_id = ? ORDER BY seq').all(STORE) as Array<{ seq: number }>).map((r) => r.seq)).toEqual(
        first.map((r) => r.seq),
      );
    });

    // Day totals: what the core's own reconciliation computes besides records.*, row for row.
    const day = first[0].created_at.slice(0, 10);
    const reconcile = await call('GET', core!.url, `/sync/reconcile?store_id=${STORE}&day=${day}`);
    expect(reconcile.status).toBe(200);
    const expected = (reconcile.body.rows as Array<{ measure: string }>).filter((r) => !r.measure.startsWith('records.'));
    // Cash sales write intents and events (no ledger rows: cash never reaches a balance); ledger.* rows, had there been any, compare the same way.
    // The outbox holds a sale's event after the sales its push loop tailed it with: this first part may hold no event.
    const hasEvents = first.some((r) => r.kind === 'event');
    expect(expected.map((r) => r.measure)).toEqual(expect.arrayContaining([...(hasEvents ? ['events'] : []), expect.stringMatching(/^intents\./)]));
    const totals = await pool.query(
      "SELECT account_id, live_mode, currency, measure, count::int, sum::int FROM sync_day_totals WHERE store_id = $1 AND day = $2 AND measure NOT LIKE 'records.%'",
      [STORE, day],
    );
    const key4 = (r: { account_id: string; currency: string; measure: string }) => `${r.account_id}|${r.currency}|${r.measure}`;
    expect([...totals.rows].sort((a, b) => key4(a).localeCompare(key4(b)))).toEqual([...expected].sort((a: any, b: any) => key4(a).localeCompare(key4(b))));
    expect(totals.rows.filter((r) => r.measure.startsWith('intents.')).reduce((n, r) => n + r.count, 0)).toBe(sales);
  }, 60_000);

  test('a core SIGKILLed after applying and before reporting converges at its next start; nothing is applied twice', async () => {
    const before = await pgStore();
    // Hold the day totals' rows: the core's report (totals first, then outcomes) waits on them.
    const blocker = await pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query("SELECT 1 FROM sync_day_totals WHERE store_id = $1 AND measure NOT LIKE 'records.%' FOR UPDATE", [STORE]);
      const second = part(1);
      await receive(second);
      await until(
        'the core applied the second part in its SQLite',
        () =>
          peek(
            coreDir,
            (db) => (db.prepare('SELECT applied_seq FROM sync_stores WHERE store_id = ?').get(STORE) as { applied_seq: number }).applied_seq === pushed,
          ),
        30_000,
      );
      await core!.kill('SIGKILL');
      // Its report, blocked on the lock, dies with its session: PostgreSQL never heard of it.
      await pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'posd-core'");
      await blocker.query('ROLLBACK');
    } finally {
      blocker.release();
    }
    expect((await pgStore()).applied_seq).toBe(before.applied_seq);

    core = await startDaemonProcess(coreDir, coreConfig());
    await until('PostgreSQL converges after the restart', async () => (await pgStore()).applied_seq === pushed, 30_000);
    const outcomes = await pool.query('SELECT outcome, count(*)::int AS n FROM sync_received WHERE store_id = $1 GROUP BY outcome', [STORE]);
    expect(outcomes.rows).toEqual([{ outcome: 'applied', n: part(0).length + part(1).length }]);
    const sales = [...part(0), ...part(1)].filter((r) => r.kind === 'cash_sale').length;
    peek(coreDir, (db) => {
      expect(db.prepare('SELECT count(*) AS n FROM intents WHERE account_id = ?').get(accountId)).toEqual({ n: sales });
      expect(db.prepare('SELECT count(*) AS n FROM sync_received WHERE store_id = ?').get(STORE)).toEqual({ n: part(0).length + part(1).length });
    });
    // The totals were published at the restart's report.
    const intents = await pool.query("SELECT sum(count)::int AS n FROM sync_day_totals WHERE store_id = $1 AND measure LIKE 'intents.%'", [STORE]);
    expect(intents.rows[0].n).toBe(sales);
  }, 90_000);

  test("a product made at the core reaches PostgreSQL's feed and wakes a front's waiting long-poll", async () => {
    const waiter = new FeedWaiter(cluster.config(), { fallbackMs: 60_000 });
    await waiter.start();
    try {
      const orgs = new Set([organizationId]);
      const mark = waiter.mark(orgs);
      const woken = waiter.wait(orgs, mark, 10_000);
      const made = await call('POST', core!.url, '/api/products', {
        product: { name: 'Corte', prices_attributes: [{ amount_in_cents: 7500, currency: 'GTQ' }] },
      });
      expect(made.status).toBe(201);
      expect(await woken).toBe(true);
      const rows = await pool.query("SELECT kind, account_id, organization_id FROM sync_feed WHERE kind = 'product' AND object_id = $1", [made.body.id]);
      expect(rows.rows).toEqual([{ kind: 'product', account_id: accountId, organization_id: organizationId }]);
      // Positions are the core's feed seqs: PostgreSQL holds every row the core's feed has.
      const local = peek(coreDir, (db) => (db.prepare('SELECT max(seq) AS m FROM sync_feed').get() as { m: number }).m);
      await until('the relay caught up', async () => (await pool.query('SELECT max(position)::int AS m FROM sync_feed')).rows[0].m === local, 10_000);
    } finally {
      await waiter.stop();
    }
  }, 30_000);

  test('a key made at the core is published (hash only) for the fronts, and its revocation too', async () => {
    const made = await whileCoreStopped(['keys', 'create', '--account', accountId, '--env', 'live', '--json']);
    const row = peek(coreDir, (db) => db.prepare('SELECT id, hash FROM api_keys WHERE prefix = ?').get(made.prefix) as { id: string; hash: string });
    // Made by another process through the log: the restarted core publishes it when it leads.
    const published = await until('the key is published', () => keyByHash(pool, row.hash), 10_000);
    expect(published).toMatchObject({
      id: row.id,
      prefix: made.prefix,
      account_id: accountId,
      organization_id: organizationId,
      live_mode: 1,
      revoked_at: null,
    });
    expect(JSON.stringify(await pool.query('SELECT * FROM sync_keys'))).not.toContain(made.key);
    const scopeRows = await scopeOf(pool, accountId);
    // The published accounts answer the key's scope as the core computes it: the account, then its sandbox.
    expect(scopeRows.map((a) => [a.live_mode, a.sandbox_of])).toEqual([
      [true, null],
      [false, accountId],
    ]);
    expect(scopeRows[0]).toMatchObject({ id: accountId, organization_id: organizationId });

    await whileCoreStopped(['keys', 'revoke', made.prefix]);
    const revoked = await until('the revocation is published', async () => (await keyByHash(pool, row.hash))?.revoked_at, 10_000);
    expect(typeof revoked).toBe('string');
  }, 120_000);

  test("a record held at the core (no applier for its kind) is held in PostgreSQL; an operator's skip at the core reaches PostgreSQL", async () => {
    const other = 'st_core_pg_held';
    const rec: PushRecord = {
      seq: 1,
      prev_seq: 0,
      id: 'rec_gift_wrap_1',
      kind: 'gift_wrap',
      account_id: accountId,
      live_mode: true,
      payload: { id: 'gw_1' },
      created_at: new Date().toISOString(),
    };
    await receivePush(pool, scope, { protocol: 1, store_id: other, records: [rec] });
    await pool.query("SELECT pg_notify('posd_received', $1)", [other]);
    const row = async () =>
      (
        await pool.query(
          'SELECT applied_seq, held_count, skipped_count, (SELECT outcome FROM sync_received WHERE id = $2) AS outcome FROM sync_stores WHERE store_id = $1',
          [other, rec.id],
        )
      ).rows[0];
    await until('the record is held in PostgreSQL', async () => (await row()).held_count === 1, 10_000);
    expect(await row()).toEqual({ applied_seq: 1, held_count: 1, skipped_count: 0, outcome: 'held' });

    await whileCoreStopped(['sync', 'skip', rec.id, '--reason', 'no such kind here']);
    await until('the skip reached PostgreSQL', async () => (await row()).skipped_count === 1, 20_000);
    expect(await row()).toEqual({ applied_seq: 1, held_count: 0, skipped_count: 1, outcome: 'skipped' });
  }, 120_000);

  test('a standby core waits while the leader lives and takes over when it is killed', async () => {
    standby = await startDaemonProcess(standbyDir, coreConfig());
    const metricsOf = async (base: string) => (await request(`${base}/metrics`)).body.text();
    await until('the standby says it is not the leader', async () => /posd_sync_projector_leader 0/.test(await metricsOf(standby!.url)), 10_000);
    const leaderText = await metricsOf(core!.url);
    expect(leaderText).toMatch(/posd_sync_projector_leader 1/);
    // The leader projects on its own thread; a standby runs none.
    expect(leaderText).toMatch(/posd_sync_projector_thread 1\n/);
    expect(await metricsOf(standby!.url)).toMatch(/posd_sync_projector_thread 0\n/);

    await core!.kill('SIGKILL');
    core = undefined;
    await until('the standby leads', async () => /posd_sync_projector_leader 1/.test(await metricsOf(standby!.url)), 20_000);
    const third = part(2);
    await receive(third);
    await until('the new leader applied the last part', async () => (await pgStore()).applied_seq === pushed, 30_000);
    // Its slices and ingest were appended to the log from its projector thread's connection.
    const taken = await metricsOf(standby!.url);
    expect(taken).toMatch(/posd_sync_projector_thread 1\n/);
    expect(Number(/posd_central_log_thread_entries (\d+)/.exec(taken)?.[1])).toBeGreaterThan(0);
    expect(pushed).toBe(records[records.length - 1].seq);
    // Its data folder was copied before any record came: it applied the whole log from PostgreSQL,
    // each record once, and PostgreSQL's outcomes did not move.
    peek(standbyDir, (db) => {
      expect(db.prepare('SELECT outcome, count(*) AS n FROM sync_received WHERE store_id = ? GROUP BY outcome').all(STORE)).toEqual([
        { outcome: 'applied', n: records.length },
      ]);
      expect(db.prepare('SELECT count(*) AS n FROM intents WHERE account_id = ?').get(accountId)).toEqual({ n: SALES });
    });
    const outcomes = await pool.query('SELECT outcome, count(*)::int AS n FROM sync_received WHERE store_id = $1 GROUP BY outcome', [STORE]);
    expect(outcomes.rows).toEqual([{ outcome: 'applied', n: records.length }]);
    expect(await pgStore()).toMatchObject({ held_count: 0, rejected_count: 0, parked_count: 0 });

    // Its feed continues past what PostgreSQL holds: a product it makes reaches the fronts.
    const made = await call('POST', standby.url, '/api/products', {
      product: { name: 'Tinte', prices_attributes: [{ amount_in_cents: 9000, currency: 'GTQ' }] },
    });
    expect(made.status).toBe(201);
    await until(
      'the new leader relays its feed',
      async () => (await pool.query("SELECT 1 FROM sync_feed WHERE kind = 'product' AND object_id = $1", [made.body.id])).rows.length === 1,
      10_000,
    );
    // The lag series is refreshed each second by the leader: it falls to 0 once everything is applied.
    await until('the lag metric says nothing is behind', async () => /posd_sync_projector_lag_records 0\n/.test(await metricsOf(standby!.url)), 10_000);
    // Lag in time: the series is there, and no store is behind (the store's series went with its backlog).
    const text = await metricsOf(standby!.url);
    expect(text).toContain('# TYPE posd_sync_store_lag_seconds gauge');
    expect(text).not.toMatch(/^posd_sync_store_lag_seconds\{/m);
  }, 90_000);

  test('a leader whose lease session is cut (the process alive) stops, waits for the lease again and leads again', async () => {
    const leasePid = async () =>
      (await pool.query("SELECT pid FROM pg_stat_activity WHERE application_name = 'posd-projector-lease'")).rows.map((r) => r.pid as number);
    const [before] = await leasePid();
    expect(before).toBeGreaterThan(0);
    await pool.query('SELECT pg_terminate_backend($1)', [before]);
    await until(
      'a new lease session holds the lock',
      async () => {
        const pids = await leasePid();
        if (pids.length !== 1 || pids[0] === before) return false;
        return (await pool.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1", [pids[0]])).rows.length === 1;
      },
      20_000,
    );
    // It answers writes again once it replayed the log to its end and says so at /readyz.
    await until('the core is ready again', async () => (await request(`${standby!.url}/readyz`)).statusCode === 200, 20_000);
    const made = await call('POST', standby!.url, '/api/products', {
      product: { name: 'Peinado', prices_attributes: [{ amount_in_cents: 5000, currency: 'GTQ' }] },
    });
    expect(made.status).toBe(201);
    await until(
      'the feed is relayed again',
      async () => (await pool.query("SELECT 1 FROM sync_feed WHERE kind = 'product' AND object_id = $1", [made.body.id])).rows.length === 1,
      10_000,
    );
  }, 40_000);
});
