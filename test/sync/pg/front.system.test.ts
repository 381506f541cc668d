import { randomBytes, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type pg from 'pg';
import { request } from 'undici';
import { Value } from '@sinclair/typebox/value';
import { startPgCluster, type PgCluster } from '../../helpers/pg-cluster.js';
import { until } from '../helpers.js';
import { killStarted, MAIN, posd, posdExit, removeTempDirs, requireBuild, startDaemonProcess, tempDir, type DaemonProcess } from '../e2e/processes.js';
import { createClient, createPool, migrate, publishAccounts, publishKeys, publishOrganizations, type SyncAccountRow } from '../../../src/sync/pg/index.js';
import { hashKey, keyDisplayPrefix } from '../../../src/accounts/service.js';
import { BootstrapResponse, FeedResponse, ReconcileResponse, type KeySnapshot } from '../../../src/sync/shared/wire.js';
import { StoresResponse } from '../../../src/sync/central/routes.js';
import { push, records } from './records.js';

// `posd serve --role central-front` as separate processes on a real PostgreSQL cluster: the read
// models are published here as the core would (its publisher is built elsewhere), then a real store
// box joins, sells offline and pushes through a front, and the wire is checked route by route,
// including a front killed mid-push, PostgreSQL stopped and started again, and SIGTERM.

const ORG = 'org_front';
const LIVE = 'acct_front_live';
const SANDBOX = 'acct_front_sbx';
const SALES = 60;

let cluster: PgCluster;
let pool: pg.Pool;
let pgUrl: string;
let fronts: DaemonProcess[] = [];
let central: DaemonProcess | undefined;
let store: DaemonProcess | undefined;
let key: string;
let spareKey: string;
let orgKey: string;
let storeDir: string;
let storeId: string;

const makeKey = (prefix: string) =>
  `${prefix}${randomBytes(24)
    .toString('base64')
    .replace(/[^0-9A-Za-z]/g, '')
    .slice(0, 32)}`;

function keyRow(id: string, k: string, kind: 'account' | 'organization', accountId: string | null, createdAt: string): KeySnapshot {
  return {
    id,
    prefix: keyDisplayPrefix(k),
    hash: hashKey(k),
    kind,
    environment: 'live',
    account_id: accountId,
    organization_id: ORG,
    live_mode: 1,
    created_at: createdAt,
    revoked_at: null,
  };
}

const accounts: SyncAccountRow[] = [
  {
    id: LIVE,
    organization_id: ORG,
    live_mode: true,
    name: 'Front store',
    sandbox_of: null,
    parent_account_id: null,
    tax_id: null,
    tax_name: null,
    country: 'GT',
    default_currency: 'GTQ',
    event_format: 'unified',
    created_at: '2026-11-01T00:00:00.000Z',
  },
  {
    id: SANDBOX,
    organization_id: ORG,
    live_mode: false,
    name: 'Front store (sandbox)',
    sandbox_of: LIVE,
    parent_account_id: null,
    tax_id: null,
    tax_name: null,
    country: 'GT',
    default_currency: 'GTQ',
    event_format: 'unified',
    created_at: '2026-11-01T00:00:00.000Z',
  },
];

async function call(
  method: 'GET' | 'POST',
  url: string,
  opts: { key?: string | null; body?: unknown; raw?: string } = {},
): Promise<{ status: number; body: any }> {
  const k = opts.key === undefined ? key : opts.key;
  const payload = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  const res = await request(url, {
    method,
    headers: { ...(k ? { 'x-secret-key': k } : {}), ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: payload,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

const startFront = () =>
  startDaemonProcess(tempDir('posd-front-'), {
    role: 'central-front',
    sync: { postgres: { url: pgUrl, pool_max: 4 } },
    http: { host: '127.0.0.1', port: 0, shutdown_grace_ms: 2000 },
  });

async function received(store: string): Promise<Array<{ seq: number; id: string }>> {
  return (await pool.query('SELECT seq, id FROM sync_received WHERE store_id = $1 ORDER BY seq', [store])).rows;
}

beforeAll(async () => {
  requireBuild();
  cluster = await startPgCluster();
  pgUrl = cluster.url();
  pool = createPool({ ...cluster.config(), max: 4 });
  await migrate(pool);
  key = makeKey('sk_live_');
  spareKey = makeKey('sk_live_');
  orgKey = makeKey('sk_org_live_');
  // As the core publishes them: the organization, then its accounts, then the key hashes.
  await publishOrganizations(pool, [{ id: ORG, name: 'Front chain', created_at: '2026-11-01T00:00:00.000Z' }]);
  await publishAccounts(pool, accounts);
  await publishKeys(pool, [
    keyRow('key_front_1', key, 'account', LIVE, '2026-11-01T00:00:01.000Z'),
    keyRow('key_front_2', spareKey, 'account', LIVE, '2026-11-01T00:00:02.000Z'),
    keyRow('key_front_org', orgKey, 'organization', null, '2026-11-01T00:00:03.000Z'),
  ]);
  fronts = await Promise.all([startFront(), startFront()]);
}, 90_000);

afterAll(async () => {
  await store?.kill('SIGTERM');
  await central?.kill('SIGTERM');
  for (const f of fronts) await f.kill('SIGTERM');
  await killStarted();
  await pool?.end();
  await cluster?.stop();
  removeTempDirs();
});

describe('posd serve --role central-front', () => {
  test('a store box joins through a front, sells offline, and its pushes are received in PostgreSQL once; the core is rung', async () => {
    storeDir = tempDir('posd-front-store-');
    const joined = await posd(['init', '--central-url', fronts[0].url, '--central-key', key, '--json', '--data', storeDir]);
    storeId = joined.store_id;
    expect(joined).toMatchObject({ organization_id: ORG, keys: 3 });
    expect(joined.accounts.map((a: { id: string }) => a.id)).toEqual([LIVE, SANDBOX]);

    // Offline: the central's address answers nothing.
    store = await startDaemonProcess(storeDir, { role: 'store', sync: { central_url: 'http://127.0.0.1:9', reconcile_interval_ms: 0 } });
    for (let i = 0; i < SALES; i++) {
      const sale = await call('POST', `${store.url}/api/cash_sales`, { body: { amount_in_cents: 100 + i, currency: 'GTQ' } });
      expect(sale.status).toBe(201);
    }
    await store.kill('SIGTERM');

    // The core LISTENs on posd_received with the store id as payload (agreed with the core's side).
    const listener = createClient(cluster.config());
    await listener.connect();
    const rung: string[] = [];
    listener.on('notification', (n) => rung.push(`${n.channel}:${n.payload}`));
    await listener.query('LISTEN posd_received');
    try {
      store = await startDaemonProcess(storeDir, {
        role: 'store',
        sync: { central_url: fronts[0].url, batch_size: 25, backoff_min_ms: 20, backoff_max_ms: 200, reconcile_interval_ms: 0 },
      });
      await until('the store has nothing waiting', async () => (await call('GET', `${store!.url}/sync/status`)).body.records_waiting === 0, 60_000);
      const status = (await call('GET', `${store.url}/sync/status`)).body;
      const rows = await received(storeId);
      // Every record the box made, once, in its order, with no gap.
      expect(rows.length).toBe(status.acked_seq);
      expect(rows.length).toBeGreaterThanOrEqual(SALES);
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1));
      expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
      const storeRow = (await pool.query('SELECT account_id, received_seq, applied_seq FROM sync_stores WHERE store_id = $1', [storeId])).rows[0];
      expect(storeRow).toEqual({ account_id: LIVE, received_seq: rows.length, applied_seq: 0 });
      // records.cash_sale counted at receipt, each sale once.
      const totals = (
        await pool.query("SELECT sum(count)::int AS n, sum(sum)::int AS s FROM sync_day_totals WHERE store_id = $1 AND measure = 'records.cash_sale'", [
          storeId,
        ])
      ).rows[0];
      expect(totals).toEqual({ n: SALES, s: SALES * 100 + (SALES * (SALES - 1)) / 2 });
      await until('the core was rung', () => rung.includes(`posd_received:${storeId}`), 5000);
    } finally {
      await listener.end();
    }
  }, 120_000);

  test('a front SIGKILLed mid-push: the retry through the other front receives each record once; a retry after an answer changes nothing', async () => {
    const st = 'st_front_kill';
    const first = await call('POST', `${fronts[0].url}/sync/push`, { body: push(st, records(st, 1, 5, { account: LIVE })) });
    expect(first).toMatchObject({ status: 200, body: { applied_seq: 5, applied: 5, duplicates: 0 } });

    // Hold the store's row: the next push's receipt waits on it inside its transaction, then its front dies.
    const blocker = createClient(cluster.config());
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT 1 FROM sync_stores WHERE store_id = $1 FOR UPDATE', [st]);
    const body = push(st, records(st, 6, 405, { account: LIVE }));
    const doomed = call('POST', `${fronts[0].url}/sync/push`, { body }).catch((err: Error) => err);
    await until(
      'the push waits on the store row',
      async () =>
        (await pool.query("SELECT 1 FROM pg_stat_activity WHERE application_name = 'posd-central-front' AND wait_event_type = 'Lock'")).rows.length > 0,
      10_000,
    );
    await fronts[0].kill('SIGKILL');
    expect(await doomed).toBeInstanceOf(Error);
    await blocker.query('COMMIT');
    await blocker.end();

    const retry = await call('POST', `${fronts[1].url}/sync/push`, { body });
    expect(retry.status).toBe(200);
    // Whatever the killed front's transaction became, the two answers add up to each record once.
    expect(retry.body.applied + retry.body.duplicates).toBe(400);
    expect(retry.body.applied_seq).toBe(405);
    const again = await call('POST', `${fronts[1].url}/sync/push`, { body });
    expect(again.body).toMatchObject({ applied_seq: 405, applied: 0, duplicates: 400 });
    const rows = await received(st);
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 405 }, (_, i) => i + 1));
    const t = (await pool.query("SELECT sum(count)::int AS n FROM sync_day_totals WHERE store_id = $1 AND measure = 'records.cash_sale'", [st])).rows[0];
    expect(t.n).toBe(405);
    fronts[0] = await startFront();
  }, 60_000);

  test('a waiting long-poll is woken within milliseconds of a feed row and its notification', async () => {
    const f = fronts[1];
    const top = (await call('GET', `${f.url}/sync/feed?after=0&store_id=st_feed_probe`)).body.cursor as number;
    const started = performance.now();
    const poll = call('GET', `${f.url}/sync/feed?after=${top}&wait_ms=20000&limit=10&store_id=st_feed_probe`);
    // The front must be waiting before the row exists, or its first read would find it: the wake is
    // what is measured. (No event crosses the process boundary to say it waits; 300 ms is ample.)
    await new Promise((r) => setTimeout(r, 300));
    const position = top + 1;
    const c = await pool.connect();
    let inserted = 0;
    try {
      await c.query('BEGIN');
      await c.query(
        `INSERT INTO sync_feed (position, organization_id, account_id, live_mode, kind, object_id, payload, created_at, to_store_id)
         VALUES ($1, $2, $3, true, 'probe', 'obj_probe', '{"n":1}', '2026-11-27T10:00:00.000Z', 'st_feed_probe')`,
        [position, ORG, LIVE],
      );
      await c.query("SELECT pg_notify('posd_feed', $1)", [ORG]);
      await c.query('COMMIT');
      inserted = performance.now();
    } finally {
      c.release();
    }
    const page = await poll;
    const answered = performance.now();
    expect(page.status).toBe(200);
    expect(Value.Check(FeedResponse, page.body)).toBe(true);
    expect(page.body.changes).toEqual([
      {
        seq: position,
        kind: 'probe',
        account_id: LIVE,
        organization_id: ORG,
        live_mode: true,
        object_id: 'obj_probe',
        payload: { n: 1 },
        created_at: '2026-11-27T10:00:00.000Z',
      },
    ]);
    expect(page.body.cursor).toBe(position);
    // It waited (the row came later), and was woken by the notification: far before the 5 s fallback.
    expect(answered - started).toBeGreaterThan(250);
    expect(answered - inserted).toBeLessThan(1000);
  }, 30_000);

  test("bootstrap, reconcile and stores answer the SQLite central's shapes from the read models and totals", async () => {
    const f = fronts[1];
    const boot = await call('GET', `${f.url}/sync/bootstrap`);
    expect(boot.status).toBe(200);
    expect(Value.Check(BootstrapResponse, boot.body)).toBe(true);
    expect(boot.body.organization).toEqual({ id: ORG, name: 'Front chain', created_at: '2026-11-01T00:00:00.000Z' });
    expect(boot.body.accounts).toEqual(accounts.map(({ organization_id: _o, ...a }) => a));
    expect(boot.body.keys.map((k: KeySnapshot) => k.id)).toEqual(['key_front_1', 'key_front_2', 'key_front_org']);
    expect(boot.body.keys.every((k: KeySnapshot) => !('key' in k) && k.hash.length === 64)).toBe(true);
    expect(boot.body.feed_cursor).toBe(0);

    // The core publishes its measures after projecting, and its projector's position.
    const day = '2026-11-27';
    await pool.query(
      `INSERT INTO sync_day_totals (store_id, account_id, live_mode, day, currency, measure, count, sum)
       VALUES ('st_front_kill', $1, true, $2, 'eur', 'ledger.payment', 3, 900) ON CONFLICT DO NOTHING`,
      [LIVE, day],
    );
    await pool.query("UPDATE sync_stores SET applied_seq = 42 WHERE store_id = 'st_front_kill'");
    const rec = await call('GET', `${f.url}/sync/reconcile?store_id=st_front_kill&day=${day}`);
    expect(rec.status).toBe(200);
    expect(Value.Check(ReconcileResponse, rec.body)).toBe(true);
    expect(rec.body.applied_seq).toBe(42);
    // The span summed: the day in the zone the store's pushes named (this store's box runs in UTC).
    expect(rec.body).toMatchObject({ zone: 'UTC', from: '2026-11-27T00:00:00.000Z', until: '2026-11-28T00:00:00.000Z' });
    await pool.query("UPDATE sync_stores SET zone = 'Pacific/Auckland' WHERE store_id = 'st_front_kill'");
    const nz = await call('GET', `${f.url}/sync/reconcile?store_id=st_front_kill&day=${day}&zone=Pacific%2FAuckland`);
    expect(nz.body).toMatchObject({ zone: 'Pacific/Auckland', from: '2026-11-26T11:00:00.000Z', until: '2026-11-27T11:00:00.000Z' });
    await pool.query("UPDATE sync_stores SET zone = 'UTC' WHERE store_id = 'st_front_kill'");
    expect(rec.body.rows).toEqual([
      { account_id: LIVE, live_mode: true, currency: 'eur', measure: 'ledger.payment', count: 3, sum: 900 },
      // These test records carry no `sale`: the cash_sale rule counts them with no currency or amount.
      { account_id: LIVE, live_mode: true, currency: '', measure: 'records.cash_sale', count: 405, sum: 0 },
    ]);
    // A store of another account: refused as at the SQLite central.
    await pool.query("INSERT INTO sync_stores (store_id, account_id, live_mode) VALUES ('st_other', 'acct_other', true) ON CONFLICT DO NOTHING");
    expect(await call('GET', `${f.url}/sync/reconcile?store_id=st_other&day=${day}`)).toMatchObject({ status: 403, body: { code: 'sync_store_mismatch' } });

    const stores = await call('GET', `${f.url}/sync/stores`);
    expect(stores.status).toBe(200);
    expect(Value.Check(StoresResponse, stores.body)).toBe(true);
    const ids = stores.body.map((s: { store_id: string }) => s.store_id);
    expect(ids).toEqual(expect.arrayContaining([storeId, 'st_front_kill']));
    expect(ids).not.toContain('st_other');
    // The real box said at its last push that nothing was left behind it.
    expect(stores.body.find((s: { store_id: string }) => s.store_id === storeId)).toMatchObject({ box_waiting: 0, box_waiting_since: null });
    expect(stores.body.find((s: { store_id: string }) => s.store_id === 'st_front_kill')).toMatchObject({
      account_id: LIVE,
      live_mode: true,
      received_seq: 405,
      applied_seq: 42,
    });
    // An organization key sees its organization's stores (and reads only).
    const byOrg = await call('GET', `${f.url}/sync/stores`, { key: orgKey });
    expect(byOrg.body.map((s: { store_id: string }) => s.store_id).sort()).toEqual([...ids].sort());
    expect(await call('GET', `${f.url}/sync/bootstrap`, { key: orgKey })).toMatchObject({ status: 403, body: { code: 'organization_key_unsupported' } });

    const time = await call('GET', `${f.url}/sync/time`);
    expect(Math.abs(Date.parse(time.body.server_time) - Date.now())).toBeLessThan(5000);
  }, 30_000);

  test('a key revoked at the core (its row republished with revoked_at) is refused at the next call', async () => {
    const f = fronts[0];
    expect((await call('GET', `${f.url}/sync/bootstrap`, { key: spareKey })).status).toBe(200);
    await publishKeys(pool, [{ ...keyRow('key_front_2', spareKey, 'account', LIVE, '2026-11-01T00:00:02.000Z'), revoked_at: '2026-11-27T09:00:00.000Z' }]);
    for (const path of ['/sync/bootstrap', '/sync/feed', '/sync/stores']) {
      expect(await call('GET', `${f.url}${path}`, { key: spareKey })).toMatchObject({ status: 401, body: { code: 'revoked_key' } });
    }
    expect(await call('POST', `${f.url}/sync/push`, { key: spareKey, body: push('st_rev', records('st_rev', 1, 1, { account: LIVE })) })).toMatchObject({
      status: 401,
      body: { code: 'revoked_key' },
    });
  });

  test('the same refusals as a SQLite central for malformed input and keys; /api and pages answer central_front_only', async () => {
    const centralDir = tempDir('posd-front-central-');
    await posd(['init', '--role', 'central', '--name', 'Chain', '--json', '--data', centralDir]);
    central = await startDaemonProcess(centralDir, { role: 'central' });
    const bogus = makeKey('sk_live_');
    const good = push('st_cmp', records('st_cmp', 1, 1, { account: LIVE }));
    const cases: Array<[string, 'GET' | 'POST', string, { key?: string | null; body?: unknown; raw?: string }]> = [
      ['unknown body field', 'POST', '/sync/push', { key: bogus, body: { ...good, extra: 1 } }],
      ['unknown record field', 'POST', '/sync/push', { key: bogus, body: { ...good, records: [{ ...good.records[0], colour: 'red' }] } }],
      ['wrong protocol', 'POST', '/sync/push', { key: bogus, body: { ...good, protocol: 2 } }],
      ['not JSON', 'POST', '/sync/push', { key: bogus, raw: '{"protocol":' }],
      // Small records, so the refusal is the count's and not the body limit's (a 413 may close the
      // socket before a large body is written: EPIPE at the client, now and then).
      ['too many records', 'POST', '/sync/push', { key: bogus, body: { ...good, records: new Array(5001).fill({}) } }],
      ['unknown query parameter', 'GET', '/sync/feed?after=0&colour=red', { key: bogus }],
      ['bad wait_ms', 'GET', '/sync/feed?wait_ms=999999', { key: bogus }],
      ['bad day', 'GET', '/sync/reconcile?store_id=st_x&day=yesterday', { key: bogus }],
      ['no key', 'GET', '/sync/bootstrap', { key: null }],
      ['unknown key', 'GET', '/sync/bootstrap', { key: bogus }],
      ['masked key', 'GET', '/sync/bootstrap', { key: 'sk_live_abcd****' }],
      ['malformed test key', 'GET', '/sync/stores', { key: 'sk_test_x' }],
      ['unknown sync route', 'GET', '/sync/nothing', {}],
      ['wrong method', 'POST', '/sync/feed', { body: {} }],
    ];
    for (const [what, method, path, opts] of cases) {
      const atCentral = await call(method, `${central.url}${path}`, opts);
      const atFront = await call(method, `${fronts[1].url}${path}`, opts);
      expect(atFront, what).toEqual(atCentral);
      expect(atFront.status, what).toBeGreaterThanOrEqual(400);
    }
    for (const path of ['/api/cash_sales', '/', '/sync/status', '/openapi.json']) {
      const r = await call('GET', `${fronts[1].url}${path}`);
      expect(r, path).toMatchObject({ status: 421, body: { code: 'central_front_only' } });
      expect(r.body.message).toContain('/sync/*');
    }
    expect(await call('POST', `${fronts[1].url}/api/cash_sales`, { body: { amount_in_cents: 1, currency: 'GTQ' } })).toMatchObject({ status: 421 });
    await central.kill('SIGTERM');
    central = undefined;
  }, 60_000);

  test('PostgreSQL stopped: 503 sync_database_unavailable and an unhealthy /healthz, no crash; it answers again once PostgreSQL is back, feed wakes included', async () => {
    const f = fronts[1];
    expect(await call('GET', `${f.url}/healthz`, { key: null })).toEqual({ status: 200, body: { status: 'ok', role: 'central-front' } });
    await pool.end();
    await cluster.halt();
    try {
      expect(await call('GET', `${f.url}/healthz`, { key: null })).toMatchObject({ status: 503, body: { code: 'sync_database_unavailable' } });
      expect(await call('POST', `${f.url}/sync/push`, { body: push('st_down', records('st_down', 1, 3, { account: LIVE })) })).toMatchObject({
        status: 503,
        body: { code: 'sync_database_unavailable' },
      });
      for (const path of ['/sync/feed?wait_ms=100', '/sync/bootstrap', '/sync/stores', '/sync/reconcile?store_id=st_down&day=2026-11-27']) {
        expect(await call('GET', `${f.url}${path}`), path).toMatchObject({ status: 503, body: { code: 'sync_database_unavailable' } });
      }
    } finally {
      await cluster.resume();
    }
    pool = createPool({ ...cluster.config(), max: 4 });
    await until('the front is healthy again', async () => (await call('GET', `${f.url}/healthz`, { key: null })).status === 200, 20_000);
    const back = await call('POST', `${f.url}/sync/push`, { body: push('st_down', records('st_down', 1, 3, { account: LIVE })) });
    expect(back).toMatchObject({ status: 200, body: { applied_seq: 3, applied: 3 } });
    expect(f.child.exitCode).toBeNull();

    // The doorbell reconnected by itself (both fronts' LISTEN sessions are back): a waiting poll is woken by a notification again.
    await until(
      'the LISTEN sessions are back',
      async () => (await pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'posd-feed-listen'")).rows[0].n >= 2,
      20_000,
    );
    const top = (await call('GET', `${f.url}/sync/feed?after=0&store_id=st_feed_probe2`)).body.cursor as number;
    const poll = call('GET', `${f.url}/sync/feed?after=${top}&wait_ms=20000&store_id=st_feed_probe2`);
    await new Promise((r) => setTimeout(r, 300));
    await pool.query(
      `WITH ins AS (INSERT INTO sync_feed (position, organization_id, account_id, live_mode, kind, object_id, payload, created_at, to_store_id)
         VALUES ($1, $2, $3, true, 'probe', 'obj_probe2', '{}', '2026-11-27T10:00:00.000Z', 'st_feed_probe2') RETURNING 1)
       SELECT pg_notify('posd_feed', $2) FROM ins`,
      [top + 1, ORG, LIVE],
    );
    const inserted = performance.now();
    const page = await poll;
    expect(page.body.changes.map((c: { object_id: string }) => c.object_id)).toEqual(['obj_probe2']);
    expect(performance.now() - inserted).toBeLessThan(1000);
  }, 90_000);

  test('the start refuses in one line without sync.postgres.url or a reachable PostgreSQL; posd doctor checks PostgreSQL and the read models', async () => {
    const none = await posdExit(['serve', '--role', 'central-front', '--port', '0']);
    expect(none.code).toBe(2);
    expect(none.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^posd: a central-front serves the sync tables from PostgreSQL: set sync\.postgres\.url/),
    ]);
    const env = { ...process.env, POSD_SYNC_POSTGRES_URL: 'postgresql://posd:hunter2@127.0.0.1:1/posd', POSD_LOG_LEVEL: 'warn' };
    const down = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [MAIN, 'serve', '--role', 'central-front', '--port', '0'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (d) => (stderr += d));
      child.once('exit', (code) => resolve({ code, stderr }));
    });
    expect(down.code).toBe(2);
    expect(down.stderr).toMatch(/^posd: cannot reach PostgreSQL at postgresql:\/\/posd:\*\*\*\*@127\.0\.0\.1:1\/posd: .*ECONNREFUSED/);
    expect(down.stderr).not.toContain('hunter2');

    const front = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(process.execPath, [MAIN, 'doctor', '--json'], {
        env: { ...process.env, POSD_ROLE: 'central-front', POSD_SYNC_POSTGRES_URL: pgUrl },
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let stdout = '';
      child.stdout!.on('data', (d) => (stdout += d));
      child.once('exit', (code) => resolve({ code, stdout }));
    });
    const report = JSON.parse(front.stdout);
    expect(report.checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok])).toEqual([
      ['postgres', true],
      ['sync tables', true],
      ['read models', true],
    ]);
    expect(front.code).toBe(0);
  }, 60_000);

  test('SIGTERM: a waiting long-poll answers at once and the front exits 0', async () => {
    const f = fronts[1];
    const top = (await call('GET', `${f.url}/sync/feed?after=0`)).body.cursor as number;
    const poll = call('GET', `${f.url}/sync/feed?after=${top}&wait_ms=60000`);
    await new Promise((r) => setTimeout(r, 300));
    const exited = new Promise<number | null>((r) => f.child.once('exit', (code) => r(code)));
    const t0 = performance.now();
    f.child.kill('SIGTERM');
    const page = await poll;
    expect(page).toMatchObject({ status: 200, body: { changes: [], cursor: top } });
    expect(await exited).toBe(0);
    expect(performance.now() - t0).toBeLessThan(5000);
  }, 30_000);
});

describe('a central-front over TLS (issue 39)', () => {
  test('serves https with a CA of its own data folder; a store joins through it pinning that CA, and one pinning another is refused', async () => {
    const frontDir = tempDir('posd-front-tls-');
    const front = await startDaemonProcess(frontDir, {
      role: 'central-front',
      sync: { postgres: { url: pgUrl, pool_max: 2 } },
      http: { host: '127.0.0.1', port: 0, shutdown_grace_ms: 2000 },
      tls: { mode: 'on' },
    });
    try {
      expect(front.url).toMatch(/^https:\/\//);
      const ca = join(frontDir, 'tls', 'ca.pem');
      const d = tempDir('posd-front-tls-store-');
      const joined = await posdExit(['init', '--central-url', front.url, '--central-key', key, '--central-ca', ca, '--data', d]);
      expect(joined.code, joined.stderr).toBe(0);
      expect(joined.stdout).toContain(`pinned        SHA-256 ${new X509Certificate(readFileSync(ca)).fingerprint256}`);
      // The first front's CA is not this one's: a store pinning it is refused at the handshake.
      const otherDir = tempDir('posd-front-tls-other-');
      const other = (await posd(['init', '--data', otherDir, '--json'])).tls_ca.file as string;
      const refused = await posdExit([
        'init',
        '--central-url',
        front.url,
        '--central-key',
        key,
        '--central-ca',
        other,
        '--data',
        tempDir('posd-front-tls-no-'),
      ]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("tls: the central's certificate is not the pinned one");
    } finally {
      await front.kill('SIGTERM');
    }
  }, 60_000);
});
