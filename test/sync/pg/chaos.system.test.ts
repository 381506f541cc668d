import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startPgCluster, type PgCluster } from '../../helpers/pg-cluster.js';
import { until } from '../helpers.js';
import { seededRandom } from '../e2e/chaos-proxy.js';
import {
  killStarted,
  peek,
  posd,
  removeTempDirs,
  requireBuild,
  ROOT,
  startDaemonProcess,
  startSimulatorProcess,
  tempDir,
  type DaemonProcess,
  type SimulatorProcess,
} from '../e2e/processes.js';
import { createPool } from '../../../src/sync/pg/index.js';
import { plainHaproxyConfig } from '../../helpers/haproxy-plain.js';
import { freePort } from '../../helpers/free-port.js';

/**
 * The chain at scale, every part its own process: one PostgreSQL cluster, the core, three fronts,
 * HAProxy running deploy/haproxy.cfg (ports substituted) in front of them, and ten store boxes
 * joined through the load balancer, selling while fronts and the core are SIGKILLed and restarted
 * on their ports at random moments (seeded: POSD_CHAOS_SEED=n replays the schedule). At the end:
 * every record received once and applied once, the stores' rows equal the core's row for row,
 * every store event id at central operations' webhook receiver, and reconciliation equal.
 */
const STORES = 10;
const SALES = 30;
const SEED = Number(process.env.POSD_CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 32));
const random = seededRandom(SEED);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cluster: PgCluster;
let pool: pg.Pool;
let pgUrl: string;
let coreDir: string;
let core: DaemonProcess;
const fronts: DaemonProcess[] = [];
let haproxy: ChildProcess | undefined;
let haproxyLog = '';
/** HAProxy's request log (httplog lines on its stdout), whole: the answers' statuses are checked. */
let requestLog = '';
let lbUrl: string;
let receiver: http.Server;
let ports: { lb: number; core: number; spare: number; fronts: number[] };
/** Two accounts of the chain, five stores each; each with its live key and its webhook secret. */
const accounts: Array<{ id: string; key: string; secret?: string }> = [];
const stores: Array<{ dir: string; id: string; account: number; daemon: DaemonProcess; terminal?: string }> = [];
/** The first box of each account has a card terminal (a simulator process): its payments write ledger rows. */
const TERMINAL_STORES = 2;
const CARD_PAYMENTS = 3;
const sims: SimulatorProcess[] = [];
/** webhook-id → the verified payloads received under it (repeats kept). */
const hooks = new Map<string, string[]>();
const badSignatures: string[] = [];
let stopChaos: () => Promise<void> = async () => {};

const limits = { per_key_per_second: 100_000 };
const coreConfig = () => ({
  role: 'central',
  limits,
  http: { host: '127.0.0.1', port: ports.core, shutdown_grace_ms: 1000 },
  sync: { postgres: { url: pgUrl, pool_max: 4 } },
  webhooks: { allow_cidrs: ['127.0.0.1/32'], retry_delays_ms: [0, 50, 100, 200, 400, 800, 1000, 1000, 1000, 1000, 1000, 1000] },
});
const frontConfig = (i: number) => ({
  role: 'central-front',
  http: { host: '127.0.0.1', port: ports.fronts[i], shutdown_grace_ms: 1000 },
  sync: { postgres: { url: pgUrl, pool_max: 4 } },
});
const storeConfig = () => ({
  role: 'store',
  limits,
  sync: { batch_size: 10, backoff_min_ms: 20, backoff_max_ms: 300, feed_wait_ms: 1000, request_timeout_ms: 3000, reconcile_interval_ms: 0 },
});

async function call(method: 'GET' | 'POST', url: string, key: string, body?: unknown, idempotencyKey?: string): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method,
    headers: { 'x-secret-key': key, ...(body ? { 'content-type': 'application/json' } : {}), ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  }).catch((err: Error) => {
    throw new Error(`${method} ${url}: ${err.message}`);
  });
  const text = await res.body.text();
  // HAProxy's own answers (502, 503, 504) are HTML: kept as text for the failure's message.
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: res.statusCode, body: parsed as any };
}

/**
 * deploy/haproxy.cfg with this test's ports: the bind, the fronts (three server lines instead of
 * the file's two) and the core. Every section and option stays (redispatch, retries, health
 * checks). One line changes for a test process: the request log goes to HAProxy's stdout (kept
 * for a failure's message) instead of /dev/log. (The file sets no fixed `maxconn`: HAProxy derives
 * it from the open-file limit, so it starts under this process's limit as shipped.)
 */
function haproxyConfig(): string {
  const src = readFileSync(join(ROOT, 'deploy/haproxy.cfg'), 'utf8');
  const frontLines = ports.fronts.map((p, i) => `    server front${i + 1} 127.0.0.1:${p}`).join('\n');
  const out = plainHaproxyConfig(src, ports.lb)
    .replace(/^(\s*)log \/dev\/log local0$/m, '$1log stdout format raw local0')
    .replace(/(?:^\s*server front\d+ 127\.0\.0\.1:\d+\n?)+/m, `${frontLines}\n`)
    .replace(/server core1 127\.0\.0\.1:4300/, `server core1 127.0.0.1:${ports.core}`)
    // One core here (killed and restarted on its port): the second core's line points at a port
    // nothing listens on, a server HAProxy's checks keep down.
    .replace(/server core2 127\.0\.0\.1:4303/, `server core2 127.0.0.1:${ports.spare}`);
  // The substitutions must all have happened (a changed deploy file fails here, not silently).
  expect(out).toContain(`bind 127.0.0.1:${ports.lb}`);
  expect(out).toContain(`server core1 127.0.0.1:${ports.core}`);
  expect(out).toContain(`server core2 127.0.0.1:${ports.spare}`);
  expect(out.match(/server front\d/g)).toHaveLength(3);
  expect(out).toMatch(/option redispatch/);
  expect(out).toContain('log stdout');
  return out;
}

beforeAll(async () => {
  requireBuild();
  console.log(`chain chaos seed ${SEED} (replay with POSD_CHAOS_SEED=${SEED})`);
  ports = { lb: await freePort(), core: await freePort(), spare: await freePort(), fronts: [await freePort(), await freePort(), await freePort()] };
  const [c] = await Promise.all([
    startPgCluster(),
    (async () => {
      receiver = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (d) => chunks.push(d));
        req.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          const id = String(req.headers['webhook-id']);
          // The endpoint's secret: the payload names its account.
          const account = accounts.find((a) => body.includes(a.id));
          try {
            new Webhook(account!.secret!).verify(body, req.headers as Record<string, string>);
            hooks.set(id, [...(hooks.get(id) ?? []), body]);
          } catch (err) {
            badSignatures.push(`${id}: ${(err as Error).message}`);
          }
          res.writeHead(200).end('ok');
        });
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    })(),
  ]);
  cluster = c;
  pgUrl = cluster.url();
  pool = createPool({ ...cluster.config(), max: 4 });

  coreDir = tempDir('posd-chain-core-');
  const inst = await posd(['init', '--role', 'central', '--name', 'Chain', '--json', '--data', coreDir]);
  for (const name of ['Zona 10', 'Antigua']) {
    const id = (await posd(['accounts', 'create', '--name', name, '--organization', inst.organization_id, '--json', '--data', coreDir])).account_id as string;
    accounts.push({ id, key: (await posd(['keys', 'create', '--account', id, '--env', 'live', '--json', '--data', coreDir])).key });
  }
  core = await startDaemonProcess(coreDir, coreConfig());
  fronts.push(...(await Promise.all([0, 1, 2].map((i) => startDaemonProcess(tempDir('posd-chain-front-'), frontConfig(i))))));

  const cfg = join(tempDir('posd-chain-lb-'), 'haproxy.cfg');
  writeFileSync(cfg, haproxyConfig());
  haproxy = spawn('/usr/sbin/haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  haproxy.stdout!.on('data', (d) => {
    haproxyLog = (haproxyLog + d).slice(-4000);
    requestLog += d;
  });
  haproxy.stderr!.on('data', (d) => (haproxyLog = (haproxyLog + d).slice(-4000)));
  lbUrl = `http://127.0.0.1:${ports.lb}`;
  // Through the load balancer: a front answers /sync/*, the core /api (a front would say 421).
  await until(
    'the load balancer answers /sync/time',
    async () =>
      (await request(`${lbUrl}/sync/time`)
        .then((r) => r.body.text().then(() => r.statusCode))
        .catch(() => 0)) === 200,
    20_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; haproxy: ${haproxyLog}`);
  });

  // The core leads (its /readyz) and HAProxy has taken the spare core's line out (it starts with every server up).
  await until('HAProxy takes the spare core out', () => /posd_core\/core2 is DOWN/.test(haproxyLog + requestLog), 20_000).catch((err: Error) => {
    throw new Error(`${err.message}; haproxy: ${haproxyLog}`);
  });
  await until('the core leads', async () => (await request(`${core.url}/readyz`).then((r) => r.body.text().then(() => r.statusCode))) === 200, 20_000);
  // And HAProxy has seen it lead: its check (every 500 ms) marked core1 down while the core was
  // still a standby at start, and /api answers 503 through the load balancer until the next check.
  await until(
    'HAProxy routes /api to the leading core',
    async () => (await request(`${lbUrl}/readyz`).then((r) => r.body.text().then(() => r.statusCode))) === 200,
    20_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; haproxy: ${haproxyLog}`);
  });
  // Central operations: an endpoint per account at the core (through the load balancer), pointing at the receiver.
  const hookUrl = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hook`;
  for (const a of accounts) {
    const ep = await call('POST', `${lbUrl}/api/webhook_endpoints`, a.key, { url: hookUrl });
    expect(ep.status, `${JSON.stringify(ep.body)}; haproxy: ${haproxyLog}`).toBe(201);
    a.secret = ep.body.signingSecret;
  }
  // The core published the accounts and keys: the boxes can join through a front.
  await until('the keys are published', async () => (await pool.query('SELECT count(*)::int AS n FROM sync_keys')).rows[0].n >= accounts.length, 20_000);

  // Ten boxes join the load balancer's address (as a manager would) and run as their own processes.
  const joined = await Promise.all(
    Array.from({ length: STORES }, async (_, i) => {
      const dir = tempDir('posd-chain-store-');
      const account = i % accounts.length;
      // HAProxy answers 503 itself while its checks (every 2 s, two misses) have every front down:
      // on this loaded box a front busy with ten bootstraps misses its checks. The operator runs
      // the join again; so does this test, a few times.
      let j: any;
      for (let attempt = 1; ; attempt++) {
        try {
          j = await posd(['init', '--central-url', lbUrl, '--central-key', accounts[account].key, '--json', '--data', dir]);
          break;
        } catch (err) {
          if (attempt === 5 || !/answer 503 is not JSON/.test((err as Error).message)) throw err;
          await sleep(1000);
        }
      }
      return { dir, id: j.store_id as string, account };
    }),
  );
  const daemons = await Promise.all(joined.map((s) => startDaemonProcess(s.dir, storeConfig())));
  joined.forEach((s, i) => stores.push({ ...s, daemon: daemons[i] }));
  await Promise.all(
    stores.slice(0, TERMINAL_STORES).map(async (s, n) => {
      const t = await call('POST', `${s.daemon.url}/api/terminals`, accounts[s.account].key, { name: `Till ${n}` });
      expect(t.status, JSON.stringify(t.body)).toBe(201);
      s.terminal = t.body.id;
      const linkUrl = `${s.daemon.url.replace(/^http/, 'ws')}/terminals/link`;
      sims.push(
        await startSimulatorProcess({
          url: linkUrl,
          terminalId: t.body.id,
          token: t.body.pairing_token,
          behaviour: 'approve',
          delaysMs: { waiting: 5, reading: 5, authorizing: 15 },
          reconnectDelayMs: 50,
        }),
      );
    }),
  );
  // Fourteen posd processes, ten joins, PostgreSQL and HAProxy started on a 2-core box: 50-70 s
  // quiet, over two minutes at a load of 20-27 (measured there: the ten joins alone 41 s).
}, 300_000);

afterAll(async () => {
  if (process.env.POSD_CHAIN_LOG) writeFileSync(process.env.POSD_CHAIN_LOG, requestLog);
  await stopChaos();
  await Promise.all(sims.map((sim) => sim.stop()));
  await Promise.all(stores.map((s) => s.daemon.kill('SIGTERM')));
  if (haproxy && haproxy.exitCode === null) {
    const gone = new Promise((r) => haproxy!.once('exit', r));
    haproxy.kill('SIGKILL');
    await gone;
  }
  await killStarted();
  await pool?.end();
  await cluster?.stop();
  await new Promise((r) => (receiver ? receiver.close(r) : r(undefined)));
  removeTempDirs();
});

describe('a chain under chaos: PostgreSQL, the core, three fronts behind HAProxy, ten store boxes', () => {
  test(`${STORES} stores sell ${SALES} cash sales and a coupon each (two of them also card payments and a refund) while fronts and the core are SIGKILLed; every record is received and applied once, rows equal, every event id at central operations once`, async () => {
    const started = Date.now();
    const kills = { core: 0, front: 0 };
    let chaos = true;
    // The killer: at random moments (200–800 ms apart) a running front or the core is SIGKILLed;
    // its restart on the same port runs meanwhile (a few seconds on this box), so kills overlap,
    // at most two fronts down at once. At least one core kill and two front kills whatever the seed.
    const down = new Set<number>();
    const restarts = new Set<Promise<void>>();
    const killer = (async () => {
      while (chaos || kills.core < 1 || kills.front < 2) {
        await sleep(200 + random() * 600);
        const up = [0, 1, 2, 3].filter((t) => !down.has(t) && (t === 3 || [...down].filter((d) => d < 3).length < 2));
        const wanted = kills.core < 1 && kills.front >= 2 ? [3] : kills.front < 2 && kills.core >= 1 ? up.filter((t) => t < 3) : up;
        const candidates = wanted.filter((t) => up.includes(t));
        if (!candidates.length) {
          await Promise.race(restarts);
          continue;
        }
        const pick = candidates[Math.floor(random() * candidates.length)];
        down.add(pick);
        if (pick === 3) {
          await core.kill('SIGKILL');
          kills.core++;
        } else {
          await fronts[pick].kill('SIGKILL');
          kills.front++;
        }
        const restart = (async () => {
          if (pick === 3) core = await startDaemonProcess(coreDir, coreConfig());
          else fronts[pick] = await startDaemonProcess(tempDir('posd-chain-front-'), frontConfig(pick));
          down.delete(pick);
        })();
        restarts.add(restart);
        restart.then(
          () => restarts.delete(restart),
          () => restarts.delete(restart),
        );
      }
      await Promise.all(restarts);
    })();
    // A restart that failed (a daemon that did not come back) fails the test here, not as a drain timeout.
    let chaosError: unknown;
    stopChaos = async () => {
      chaos = false;
      await killer.catch((err) => (chaosError ??= err));
    };

    // A card payment on a box's terminal: the command, then its result; the payment intent it settled.
    const cardPayment = async (s: (typeof stores)[number], n: number, i: number): Promise<string> => {
      const key = accounts[s.account].key;
      const cmd = await call('POST', `${s.daemon.url}/api/terminal_session_commands`, key, {
        terminal_id: s.terminal,
        external_id: `card-${n}-${i}`,
        amount_in_cents: 5000 + n * 100 + i,
        currency: 'GTQ',
      });
      expect(cmd.status, JSON.stringify(cmd.body)).toBe(201);
      const result = await until(
        `card payment ${n}-${i}`,
        async () => {
          const now = (await call('GET', `${s.daemon.url}/api/terminal_session_commands/${cmd.body.id}`, key)).body;
          return now.final ? now : undefined;
        },
        30_000,
      );
      expect(result.status).toBe('consumed');
      return peek(
        s.dir,
        (db) => (db.prepare("SELECT id FROM payment_intents WHERE checkout_id = ? AND status = 'succeeded'").get(result.checkout_id) as { id: string }).id,
      );
    };
    // Each box: its sales one after the other (the box is never killed: every answer is a 201), a
    // coupon midway; the terminal boxes also take card payments and refund the first.
    const sell = async (s: (typeof stores)[number], n: number) => {
      const key = accounts[s.account].key;
      const paid: string[] = [];
      for (let i = 0; i < SALES; i++) {
        if (s.terminal && i % 10 === 3 && paid.length < CARD_PAYMENTS) paid.push(await cardPayment(s, n, i));
        if (s.terminal && i === 25) {
          const refund = await call('POST', `${s.daemon.url}/api/refunds`, key, { payment_intent_id: paid[0], reason: 'changed mind' });
          expect(refund.status, JSON.stringify(refund.body)).toBe(201);
        }
        const sale = await call('POST', `${s.daemon.url}/api/cash_sales`, key, { amount_in_cents: 100 + n * 1000 + i, currency: 'GTQ' }, `sale-${n}-${i}`);
        expect(sale.status, JSON.stringify(sale.body)).toBe(201);
        if (i === SALES / 2) {
          const coupon = await call('POST', `${s.daemon.url}/api/coupons`, key, { name: `CHAIN${n}`, amount_off_in_cents: 500, currency: 'GTQ' });
          expect(coupon.status, JSON.stringify(coupon.body)).toBe(201);
        }
        await sleep(random() * 40);
      }
    };
    try {
      await Promise.all(stores.map((s, n) => sell(s, n)));
    } finally {
      await stopChaos();
    }
    if (chaosError) throw chaosError;
    const soldMs = Date.now() - started;

    // Drained: every box's outbox acknowledged; PostgreSQL received all of it and applied all of it; the core's projector idle.
    const outbox = (s: (typeof stores)[number]) =>
      peek(s.dir, (db) => db.prepare('SELECT count(*) AS n, coalesce(max(seq), 0) AS top FROM sync_outbox').get() as { n: number; top: number });
    let last: unknown;
    await until(
      `the chain to drain (seed ${SEED})`,
      async () => {
        for (const s of stores) {
          const st = (await call('GET', `${s.daemon.url}/sync/status`, accounts[s.account].key)).body;
          last = { store: s.id, st };
          if (st.records_waiting !== 0) return false;
        }
        const pgRows = (await pool.query('SELECT store_id, received_seq, applied_seq FROM sync_stores')).rows as Array<{
          store_id: string;
          received_seq: number;
          applied_seq: number;
        }>;
        last = pgRows;
        for (const s of stores) {
          const row = pgRows.find((r) => r.store_id === s.id);
          if (!row || row.applied_seq !== row.received_seq || row.received_seq !== outbox(s).top) return false;
        }
        const coreRows = peek(coreDir, (db) => db.prepare('SELECT store_id, received_seq, applied_seq FROM sync_stores').all() as typeof pgRows);
        last = coreRows;
        return stores.every((s) => coreRows.some((r) => r.store_id === s.id && r.applied_seq === r.received_seq && r.received_seq === outbox(s).top));
      },
      60_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last ${JSON.stringify(last)}; haproxy: ${haproxyLog}`);
    });

    const drainedMs = Date.now() - started;

    // Every record received once (PostgreSQL and the core's SQLite hold the box's outbox, seq for seq) and applied once.
    const coreDb = new Database(join(coreDir, 'posd.db'), { readonly: true });
    try {
      for (const s of stores) {
        const box = peek(s.dir, (db) => db.prepare('SELECT seq, id FROM sync_outbox ORDER BY seq').all() as Array<{ seq: number; id: string }>);
        expect(box.length).toBeGreaterThanOrEqual(SALES + 1);
        const pgRec = (await pool.query('SELECT seq, id, outcome FROM sync_received WHERE store_id = $1 ORDER BY seq', [s.id])).rows;
        expect(pgRec.map((r) => ({ seq: r.seq, id: r.id }))).toEqual(box);
        expect(pgRec.every((r) => r.outcome === 'applied')).toBe(true);
        const coreRec = coreDb.prepare('SELECT seq, id, outcome FROM sync_received WHERE store_id = ? ORDER BY seq').all(s.id) as Array<{
          seq: number;
          id: string;
          outcome: string;
        }>;
        expect(coreRec.map((r) => ({ seq: r.seq, id: r.id }))).toEqual(box);
        expect(coreRec.every((r) => r.outcome === 'applied')).toBe(true);
      }

      // Row for row: each account's rows at the core are its boxes' rows, under the same ids.
      const intentQ = 'SELECT id, type, status, amount_in_cents, currency, checkout_id, created_at FROM intents WHERE account_id = ? ORDER BY id';
      const cashQ =
        'SELECT c.id, c.intent_id, c.checkout_id, c.amount_in_cents FROM cash_intents c JOIN intents i ON i.id = c.intent_id WHERE i.account_id = ? ORDER BY c.id';
      const ledgerQ =
        'SELECT id, type, amount_in_cents, fee_in_cents, net_amount_in_cents, currency, source_id, source_type, created_at FROM balance_transactions WHERE account_id = ? ORDER BY id';
      const couponQ = 'SELECT id, name, amount_off_in_cents, currency, created_at FROM coupons WHERE account_id = ? ORDER BY id';
      const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
      for (const [n, a] of accounts.entries()) {
        const mine = stores.filter((s) => s.account === n);
        // The account's boxes' rows, once per id: coupons and ledger rows travel back down the feed
        // to the account's other boxes, so a box may hold its siblings' too (equal wherever held).
        const onceById = <T extends { id: string }>(q: string): T[] => {
          const rows = new Map<string, T>();
          for (const s of mine) {
            for (const row of peek(s.dir, (db) => db.prepare(q).all(a.id) as T[])) {
              const held = rows.get(row.id);
              if (held) expect(row, `${q} at ${s.id}`).toEqual(held);
              rows.set(row.id, row);
            }
          }
          return [...rows.values()].sort(byId);
        };
        for (const q of [intentQ, cashQ, ledgerQ, couponQ]) expect(coreDb.prepare(q).all(a.id), q).toEqual(onceById(q));
        expect(onceById(couponQ)).toHaveLength(mine.length);
        // The terminal box's card charges and the refund of the first: ledger rows, the same at the core.
        expect(
          onceById<{ id: string; type: string }>(ledgerQ)
            .map((r) => r.type)
            .sort(),
        ).toEqual([...Array(CARD_PAYMENTS).fill('charge'), 'refund']);
        const cash = mine.flatMap((s) => peek(s.dir, (db) => db.prepare(cashQ).all(a.id) as Array<{ amount_in_cents: number }>));
        expect(cash).toHaveLength(mine.length * SALES);
        expect(new Set(cash.map((c) => c.amount_in_cents)).size).toBe(mine.length * SALES);
      }

      // Central operations: every event the boxes made reaches the receiver, each distinct webhook-id
      // once in the set, with the same payload whenever it came again (a core killed mid-delivery).
      const events = stores
        .flatMap((s) => peek(s.dir, (db) => (db.prepare('SELECT id FROM events ORDER BY id').all() as Array<{ id: string }>).map((e) => e.id)))
        .sort();
      // A cash sale emits its event; making a coupon emits none.
      expect(events.length).toBeGreaterThanOrEqual(STORES * SALES);
      expect(new Set(events).size).toBe(events.length);
      const reemitted = (
        coreDb
          .prepare("SELECT id FROM events WHERE id IN (SELECT json_extract(payload, '$.id') FROM sync_received WHERE kind = 'event') ORDER BY id")
          .all() as Array<{ id: string }>
      ).map((e) => e.id);
      expect(reemitted).toEqual(events);
      await until('every event at the receiver', () => events.every((id) => hooks.has(id)), 30_000).catch(() => undefined);
      expect(badSignatures).toEqual([]);
      expect([...hooks.keys()].sort()).toEqual(events);
      const repeated = [...hooks.values()].filter((bodies) => bodies.length > 1);
      for (const bodies of repeated) expect(new Set(bodies).size).toBe(1);

      // Reconciliation through the load balancer (the box's own command, against a front) says equal.
      const today = new Date().toISOString().slice(0, 10);
      const recs = await Promise.all(stores.map((s) => posd(['reconcile', '--date', today, '--json', '--data', s.dir])));
      for (const [i, rec] of recs.entries()) {
        expect(rec.state, JSON.stringify(rec)).toBe('equal');
        expect(rec.rows.find((r: any) => r.measure === 'records.cash_sale')).toMatchObject({ store_count: SALES, central_count: SALES });
        expect(
          rec.rows.find((r: any) => r.measure === 'intents.cash.succeeded'),
          stores[i].id,
        ).toMatchObject({ store_count: SALES, central_count: SALES });
      }
      // No posd process answered a 5xx (PostgreSQL never went down here). HAProxy's own 502/503
      // (no answer header from the server: Tr = -1, a process killed mid-request, or connections
      // refused on every try while two fronts restarted) are retried by the boxes.
      const answers = [...requestLog.matchAll(/ (posd_\w+)\/(\S+) -?\d+\/-?\d+\/-?\d+\/(-?\d+)\/\+?\d+ (\d{3}) [^\n]*"(\w+ [^ ?]+)/g)].map((m) => ({
        server: `${m[1]}/${m[2]}`,
        answered: Number(m[3]) >= 0,
        status: Number(m[4]),
        request: m[5],
      }));
      expect(answers.filter((a) => a.server.startsWith('posd_fronts/') && a.request === 'POST /sync/push' && a.status === 200).length).toBeGreaterThan(STORES);
      expect(answers.filter((a) => a.answered && a.status >= 500)).toEqual([]);
      const statuses: Record<string, number> = {};
      for (const a of answers) statuses[`${a.server} ${a.status}`] = (statuses[`${a.server} ${a.status}`] ?? 0) + 1;
      console.log(
        `chain chaos (seed ${SEED}): ${STORES} stores x ${SALES} sales + a coupon (+ card payments and refunds) sold in ${soldMs} ms, drained at ${drainedMs} ms, checked at ${Date.now() - started} ms; ` +
          `${kills.core} core kills, ${kills.front} front kills, ${events.length} events, ${repeated.length} webhook ids delivered again; answers through HAProxy by status ${JSON.stringify(statuses)}`,
      );
    } finally {
      coreDb.close();
    }
  }, 180_000);
});
