import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import pino from 'pino';
import { request } from 'undici';
import { MAIN, type BenchResult } from './lib.js';
import { percentile } from './sync.js';
import { freePort, inBatches, lineMatching, stop } from './chain.js';
import { startPgCluster } from '../test/helpers/pg-cluster.js';
import { plainHaproxyConfig } from '../test/helpers/haproxy-plain.js';
import { validateConfig } from '../src/config.js';
import { createContext } from '../src/daemon.js';
import { AccountsService } from '../src/accounts/service.js';
import { createCashSale } from '../src/modules/cash-sales/service.js';
import { tailEvents } from '../src/sync/store/push.js';
import { STATE } from '../src/sync/shared/state.js';
import { storeSide } from '../src/sync/store/sync-store.js';
import { createPool, migrate } from '../src/sync/pg/index.js';

const run$ = promisify(execFile);
const posd = async (args: string[]) => JSON.parse((await run$(process.execPath, [MAIN, ...args, '--json'])).stdout);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ROOT = join(import.meta.dirname, '../..');

/**
 * The chain on PostgreSQL (issue 33), every part its own process: a cluster, two cores (the second
 * from an empty folder: a standby replaying the log), two fronts, HAProxy with deploy/haproxy.cfg,
 * and N boxes (`POSD_BENCH_CHAINPG_N`, 10) that sold offline (`POSD_BENCH_CHAINPG_SALES` each,
 * 10,000) catching up at once. A quarter in, a front is SIGKILLed (and restarted); half-way, the
 * leading core (and restarted, as a standby). Printed: the drain time and records/s applied (what
 * PostgreSQL says applied) beside a raw `unnest` insert of as many rows in the same cluster; the
 * central's `POST /api/cash_sales` through HAProxy during the catch-up (p99, the failover's
 * refusals apart); the failover (leader killed to the standby's /readyz 200); lost and doubled
 * (every box's sales and every acknowledged central sale, counted in the final leader's file).
 */
export async function run(): Promise<BenchResult[]> {
  const n = Number(process.env.POSD_BENCH_CHAINPG_N ?? 10);
  const sales = Number(process.env.POSD_BENCH_CHAINPG_SALES ?? 10_000);
  const cluster = await startPgCluster();
  const pgUrl = cluster.url();
  const pool = createPool({ ...cluster.config(), max: 2 });
  await migrate(pool);
  const tmp = mkdtempSync(join(tmpdir(), 'posd-bench-chainpg-'));
  const ports = { lb: await freePort(), cores: [await freePort(), await freePort()], fronts: [await freePort(), await freePort()] };
  const coreDirs = [join(tmp, 'core1'), join(tmp, 'core2')];
  const children: ChildProcess[] = [];
  const started = (c: ChildProcess) => (children.push(c), c);
  let served = 0;
  const serve = (args: string[], env: Record<string, string> = {}) => {
    const c = started(
      spawn(process.execPath, [MAIN, 'serve', ...args], {
        env: { ...process.env, POSD_LOG_FORMAT: 'json', POSD_SYNC_POSTGRES_URL: pgUrl, ...env },
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    );
    // POSD_BENCH_KEEP: each process's log kept in the run's folder (and the folder kept).
    if (process.env.POSD_BENCH_KEEP) c.stdout!.pipe(createWriteStream(join(tmp, `log-${served++}-${args.join('_').replace(/[^\w-]/g, '')}.log`)));
    return c;
  };
  const listening = (c: ChildProcess) => lineMatching(c, /"msg":"posd listening"/);
  const cores: Array<ChildProcess | undefined> = [];
  const startCore = async (i: number) => {
    cores[i] = serve(['--role', 'central', '--data', coreDirs[i], '--port', String(ports.cores[i])]);
    await listening(cores[i]!);
  };
  const fronts: ChildProcess[] = [];
  const startFront = async (i: number) => {
    fronts[i] = serve(['--role', 'central-front', '--port', String(ports.fronts[i])]);
    await listening(fronts[i]);
  };
  const readyz = (i: number) =>
    request(`http://127.0.0.1:${ports.cores[i]}/readyz`)
      .then(async (r) => (await r.body.text(), r.statusCode))
      .catch(() => 0);
  const until = async (fn: () => Promise<boolean> | boolean, ms: number, what: string) => {
    const end = Date.now() + ms;
    while (!(await fn())) {
      if (Date.now() > end) throw new Error(`timed out: ${what}`);
      await sleep(20);
    }
  };
  try {
    const inst = await posd(['init', '--role', 'central', '--data', coreDirs[0]]);
    const centralKey = inst.keys.live as string;
    const keys: string[] = [];
    const accountIds: string[] = [];
    for (let i = 0; i < n; i++) {
      const acct = await posd(['accounts', 'create', '--name', `Store ${i}`, '--organization', inst.organization_id, '--data', coreDirs[0]]);
      accountIds.push(acct.account_id);
      keys.push((await posd(['keys', 'create', '--account', acct.account_id, '--env', 'live', '--data', coreDirs[0]])).key);
    }
    await startCore(0);
    await until(async () => (await readyz(0)) === 200, 30_000, 'the first core leads');
    await startCore(1);
    await Promise.all([0, 1].map(startFront));
    // Plain on loopback (test/helpers/haproxy-plain.ts): the subject here is the catch-up, not TLS.
    const cfg = plainHaproxyConfig(readFileSync(join(ROOT, 'deploy/haproxy.cfg'), 'utf8'), ports.lb)
      .replace(/^(\s*)log \/dev\/log local0$/m, '')
      .replace(/server front1 127\.0\.0\.1:4301/, `server front1 127.0.0.1:${ports.fronts[0]}`)
      .replace(/server front2 127\.0\.0\.1:4302/, `server front2 127.0.0.1:${ports.fronts[1]}`)
      .replace(/server core1 127\.0\.0\.1:4300/, `server core1 127.0.0.1:${ports.cores[0]}`)
      .replace(/server core2 127\.0\.0\.1:4303/, `server core2 127.0.0.1:${ports.cores[1]}`);
    writeFileSync(join(tmp, 'haproxy.cfg'), cfg);
    started(spawn('/usr/sbin/haproxy', ['-db', '-f', join(tmp, 'haproxy.cfg')], { stdio: 'ignore' }));
    const lb = `http://127.0.0.1:${ports.lb}`;
    await until(async () => (await pool.query('SELECT count(*)::int AS n FROM sync_keys')).rows[0].n >= n, 30_000, 'keys published');
    await sleep(1500); // HAProxy's first checks take the standby out

    // The boxes join through HAProxy, then sell offline (made in this process: not measured).
    const stores: Array<{ dir: string; storeId: string; lastSeq: number; sales: number; child?: ChildProcess }> = [];
    await inBatches(n, 4, async (i) => {
      const dir = join(tmp, `store${i}`);
      await posd(['init', '--central-url', lb, '--central-key', keys[i], '--data', dir]);
      const ctx = createContext(validateConfig({ data_dir: dir, role: 'store', database: { synchronous: 'NORMAL' } }), { log: pino({ level: 'silent' }) });
      try {
        const account = new AccountsService(ctx.db, ctx.clock).account(accountIds[i])!;
        for (let s = 0; s < sales; s++) await createCashSale(ctx, account, { amount_in_cents: 100 + (s % 5000), currency: 'GTQ' } as never);
        tailEvents(ctx.db, sales * 4);
        const side = storeSide(ctx.db);
        stores[i] = { dir, storeId: side.state(STATE.storeId)!, lastSeq: side.maxOutboxSeq(), sales };
      } finally {
        ctx.db.close();
      }
    });
    const records = stores.reduce((a, s) => a + s.lastSeq, 0);

    // The catch-up: every box at once; the central's own sales through HAProxy meanwhile.
    const t0 = performance.now();
    for (const s of stores)
      s.child = serve(['--data', s.dir, '--port', '0'], { POSD_SYNC_POSTGRES_URL: '', POSD_SYNC_BACKOFF_MIN_MS: '250', POSD_SYNC_BACKOFF_MAX_MS: '500' });
    const applied = async () => Number((await pool.query('SELECT coalesce(sum(applied_seq), 0)::bigint AS a FROM sync_stores')).rows[0].a);
    let draining = true;
    const probe = { ms: [] as number[], refused: 0, acked: new Map<string, string>(), codes: new Map<string, number>() };
    const prober = (async () => {
      for (let i = 0; draining; i++) {
        const idem = `bench-${i}`;
        for (;;) {
          const t = performance.now();
          const r = await request(`${lb}/api/cash_sales`, {
            method: 'POST',
            headers: { 'x-secret-key': centralKey, 'content-type': 'application/json', 'idempotency-key': idem },
            body: JSON.stringify({ amount_in_cents: 100 + (i % 500), currency: 'GTQ' }),
          }).catch(() => undefined);
          const body = r ? await r.body.text() : '';
          if (r?.statusCode === 201 || r?.statusCode === 200) {
            probe.ms.push(performance.now() - t);
            probe.acked.set(idem, JSON.parse(body).id);
            break;
          }
          probe.refused++;
          const code = `${r?.statusCode ?? 'no answer'} ${/"code":"(\w+)"/.exec(body)?.[1] ?? ''}`;
          probe.codes.set(code, (probe.codes.get(code) ?? 0) + 1);
          await sleep(50);
        }
        await sleep(20);
      }
    })();
    let failoverMs = Number.NaN;
    await until(async () => (await applied()) >= records / 4, 3_600_000, 'a quarter applied');
    fronts[0].kill('SIGKILL');
    await sleep(500);
    await startFront(0);
    await until(async () => (await applied()) >= records / 2, 3_600_000, 'half applied');
    const killedAt = performance.now();
    cores[0]!.kill('SIGKILL');
    await until(async () => (await readyz(1)) === 200, 60_000, 'the standby leads');
    failoverMs = performance.now() - killedAt;
    await startCore(0);
    await until(async () => (await applied()) >= records, 3_600_000, 'everything applied');
    const seconds = (performance.now() - t0) / 1000;
    draining = false;
    await prober;

    // Lost and doubled, in the final leader's file: each box's sales, each acknowledged central sale.
    for (const s of stores) if (s.child) await stop(s.child);
    await stop(cores[1]!);
    const db = new Database(join(coreDirs[1], 'posd.db'), { readonly: true });
    let lost = 0;
    let doubled = 0;
    try {
      const perStore = db.prepare("SELECT count(*) AS n FROM sync_received WHERE store_id = ? AND outcome = 'applied'").pluck();
      for (const s of stores) {
        const got = perStore.get(s.storeId) as number;
        lost += Math.max(0, s.lastSeq - got);
        doubled += Math.max(0, got - s.lastSeq);
      }
      const one = db.prepare('SELECT count(*) FROM intents WHERE id = ?').pluck();
      for (const id of probe.acked.values()) {
        const got = one.get(id) as number;
        if (got === 0) lost++;
        if (got > 1) doubled += got - 1;
      }
    } finally {
      db.close();
    }
    const rawRate = await rawInsert(pool, records);
    const failover = Math.round(failoverMs);
    if (probe.codes.size) console.log(`  refusals: ${[...probe.codes].map(([c, k]) => `${c} x${k}`).join(', ')}`);
    return [
      {
        scenario: `chain-pg: ${n} boxes catching up at once (${sales} offline sales each, ${records} records) through HAProxy, 2 fronts (one SIGKILLed), 2 cores (the leader SIGKILLed half-way)`,
        metrics: { 'records/s applied': records / seconds, 'drain s': seconds, 'failover ms': failover, lost, doubled },
        baseline: { 'rows/s raw PostgreSQL unnest insert': rawRate },
        ratio: records / seconds / rawRate,
        target: '>= 8,000 records/s, failover < 10 s, 0 lost, 0 doubled',
      },
      {
        scenario: `chain-pg: POST /api/cash_sales through HAProxy during that catch-up (${probe.ms.length} answered, ${probe.refused} refused during the failover and retried)`,
        metrics: { 'p50 ms': percentile(probe.ms, 0.5), 'p99 ms': percentile(probe.ms, 0.99) },
        baseline: { 'p50 ms': percentile(probe.ms, 0.5) },
        ratio: 50 / percentile(probe.ms, 0.99),
        target: 'p99 < 50 ms',
      },
    ];
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await pool.end();
    await cluster.stop();
    if (process.env.POSD_BENCH_KEEP) console.log(`kept ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  }
}

/** The same number of rows as records, inserted raw with `unnest` in batches of 1,000 (text id and ~200-byte payload). */
async function rawInsert(pool: ReturnType<typeof createPool>, rows: number): Promise<number> {
  await pool.query('CREATE TABLE bench_raw (id text PRIMARY KEY, payload text NOT NULL)');
  const payload = 'x'.repeat(200);
  const t0 = performance.now();
  for (let i = 0; i < rows; i += 1000) {
    const ids = Array.from({ length: Math.min(1000, rows - i) }, (_, k) => `raw_${i + k}`);
    await pool.query('INSERT INTO bench_raw SELECT * FROM unnest($1::text[], $2::text[])', [ids, ids.map(() => payload)]);
  }
  return (rows / (performance.now() - t0)) * 1000;
}
