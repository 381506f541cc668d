import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { MAIN, type BenchResult } from './lib.js';
import { cpuSeconds, feedDelays, getJson, percentile, probeSales, rawBaseline } from './sync.js';
import { validateConfig } from '../src/config.js';
import { createContext } from '../src/daemon.js';
import { AccountsService } from '../src/accounts/service.js';
import { createCashSale } from '../src/modules/cash-sales/service.js';
import { tailEvents } from '../src/sync/store/push.js';
import { STATE } from '../src/sync/shared/state.js';
import { storeSide } from '../src/sync/store/sync-store.js';
import { freePort } from '../test/helpers/free-port.js';

export { freePort };

const run$ = promisify(execFile);
const posd = async (args: string[]) => JSON.parse((await run$(process.execPath, [MAIN, ...args, '--json'])).stdout);

/**
 * The chain driver (issue 19): one central and N store processes (`posd serve`, each its own data
 * folder, account and key) that were offline while they sold, started at once so they all catch up
 * together, as after a chain-wide outage. Measured for N = 1, 10, 50 (`POSD_BENCH_CHAIN_N`; sales
 * per box `POSD_BENCH_CHAIN_SALES`, else about 40,000 records in all):
 * - records applied at the central per second until every store's last record is applied, beside
 *   raw better-sqlite3 inserting the same rows in batches (the central's ceiling on this disk);
 * - each push's round trip as the boxes saw it (their `sync: pushed` debug lines), p50 and p99;
 * - `POST /api/cash_sales` at the central during the catch-up (p99 goal < 50 ms), beside idle;
 * - a change made at the central reaching a waiting long-poll while the N boxes' polls wait (p99 goal < 50 ms);
 * - the central's CPU over 10 s with the N boxes idle (long-polling), which should be flat in N.
 */
export async function run(): Promise<BenchResult[]> {
  const sizes = (process.env.POSD_BENCH_CHAIN_N ?? '1,10,50').split(',').map(Number);
  // About 40,000 records in all at each N (two per sale), so the rates compare; at least 200 sales a box.
  const salesFor = (n: number) => Number(process.env.POSD_BENCH_CHAIN_SALES ?? Math.max(200, Math.round(20_000 / n)));
  const results: BenchResult[] = [];
  const idleCpu: Array<{ n: number; percent: number }> = [];
  for (const n of sizes) {
    const r = await chain(n, salesFor(n));
    results.push(...r.results);
    idleCpu.push({ n, percent: r.idlePercent });
  }
  const first = idleCpu[0];
  for (const c of idleCpu.slice(1)) {
    results.push({
      scenario: `chain: the central's CPU with ${c.n} idle boxes long-polling, beside ${first.n}, over 10 s`,
      metrics: { [`% of a core, ${c.n} boxes`]: c.percent },
      baseline: { [`% of a core, ${first.n} box(es)`]: first.percent },
      ratio: (first.percent + 0.1) / (c.percent + 0.1),
      target: 'flat in N (ratio near 1)',
    });
  }
  return results;
}

interface Store {
  dir: string;
  storeId: string;
  lastSeq: number;
  records: number;
  child?: ChildProcess;
  pushes: number[];
}

async function chain(n: number, salesPerStore: number): Promise<{ results: BenchResult[]; idlePercent: number }> {
  const centralDir = mkdtempSync(join(tmpdir(), 'posd-bench-chain-central-'));
  const inst = await posd(['init', '--role', 'central', '--data', centralDir]);
  const orgKey = (await posd(['keys', 'create', '--organization', inst.organization_id, '--env', 'live', '--data', centralDir])).key as string;
  const port = await freePort();
  const startCentral = () =>
    spawn(process.execPath, [MAIN, 'serve', '--data', centralDir, '--port', String(port)], {
      env: { ...process.env, POSD_LOG_LEVEL: 'info', POSD_LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
  let central = startCentral();
  const stores: Store[] = [];
  try {
    const url = (await lineMatching(central, /"url":"(http:\/\/127\.0\.0\.1:\d+)\/api"/))[1];
    // Each store its own account and key at the central, joined while the link was up, then
    // offline while it sold (the backlog is made in this process, at synchronous=NORMAL: making it is not measured).
    await inBatches(n, 4, async (i) => {
      const acct = await posd(['accounts', 'create', '--name', `Store ${i}`, '--organization', inst.organization_id, '--data', centralDir]);
      const key = (await posd(['keys', 'create', '--account', acct.account_id, '--env', 'live', '--data', centralDir])).key as string;
      const dir = mkdtempSync(join(tmpdir(), 'posd-bench-chain-store-'));
      await posd(['init', '--central-url', url, '--central-key', key, '--data', dir]);
      const config = validateConfig({ data_dir: dir, role: 'store', database: { synchronous: 'NORMAL' } });
      const ctx = createContext(config, { log: pino({ level: 'silent' }) });
      try {
        const account = new AccountsService(ctx.db, ctx.clock).account(acct.account_id)!;
        for (let s = 0; s < salesPerStore; s++) await createCashSale(ctx, account, { amount_in_cents: 100 + (s % 5000), currency: 'GTQ' } as never);
        tailEvents(ctx.db, salesPerStore * 4);
        const store = storeSide(ctx.db);
        const lastSeq = store.maxOutboxSeq();
        stores[i] = { dir, storeId: store.state(STATE.storeId)!, lastSeq, records: store.waiting(0).n, pushes: [] };
      } finally {
        ctx.db.close();
      }
    });
    const records = stores.reduce((a, s) => a + s.records, 0);
    const centralKey = inst.keys.live as string;
    const idleProbe = await probeSales(url, centralKey, () => false, 3000);

    // The link returns for every box at once: the central is stopped, the boxes started (they
    // retry every half second), then the central started again on the same port. The clock runs
    // from the central's first answer, so the boxes' own start is not counted.
    await stop(central);
    await Promise.all(
      stores.map(async (s) => {
        s.child = spawn(process.execPath, [MAIN, 'serve', '--data', s.dir, '--port', '0'], {
          env: { ...process.env, POSD_LOG_LEVEL: 'debug', POSD_LOG_FORMAT: 'json', POSD_SYNC_BACKOFF_MIN_MS: '250', POSD_SYNC_BACKOFF_MAX_MS: '500' },
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        collectPushes(s);
        await lineMatching(s.child, /"url":"http:\/\/127\.0\.0\.1:\d+\/api"/);
      }),
    );
    central = startCentral();
    await lineMatching(central, /"url":"(http:\/\/127\.0\.0\.1:\d+)\/api"/);
    const t0 = performance.now();
    let draining = true;
    const [busyProbe] = await Promise.all([
      probeSales(url, centralKey, () => draining, Number.POSITIVE_INFINITY),
      (async () => {
        const last = new Map(stores.map((s) => [s.storeId, s.lastSeq]));
        for (;;) {
          const rows = (await getJson(`${url}/sync/stores`, orgKey)) as Array<{ store_id: string; applied_seq: number }>;
          const done = rows.filter((r) => r.applied_seq >= (last.get(r.store_id) ?? Infinity)).length;
          if (done === stores.length) break;
          await new Promise((r) => setTimeout(r, 100));
        }
      })().finally(() => (draining = false)),
    ]);
    const seconds = (performance.now() - t0) / 1000;
    const pushes = stores.flatMap((s) => s.pushes);
    const rate = records / seconds;
    const rawRate = rawBaseline(Math.min(records, 50_000), 500, 'FULL');

    // Idle: the boxes wait on the feed. A change made at the central reaches a waiting poll of the
    // driver's (the boxes' own polls wait beside it), then the central's CPU over 10 s.
    const feed = await feedDelays(url, centralKey, 20, 'store_chain_probe');
    await new Promise((r) => setTimeout(r, 1000));
    const c0 = cpuSeconds(central.pid!);
    await new Promise((r) => setTimeout(r, 10_000));
    const idlePercent = (100 * (cpuSeconds(central.pid!) - c0)) / 10;

    return {
      idlePercent,
      results: [
        {
          scenario: `chain: ${n} store process(es) catching up at once (${salesPerStore} offline sales each, ${records} records), central on SQLite, synchronous=FULL`,
          metrics: {
            'records/s applied': rate,
            'drain s': seconds,
            pushes: pushes.length,
            'push p50 ms': percentile(pushes, 0.5),
            'push p99 ms': percentile(pushes, 0.99),
          },
          baseline: { 'rows/s raw batch insert': rawRate },
          ratio: rate / rawRate,
          target: '>= 8,000 records/s applied (issue 19)',
        },
        {
          scenario: `chain: POST /api/cash_sales at the central while ${n} store(s) catch up (${busyProbe.length} sales, one at a time)`,
          metrics: { 'p50 ms': percentile(busyProbe, 0.5), 'p99 ms': percentile(busyProbe, 0.99) },
          baseline: { 'p50 ms idle': percentile(idleProbe, 0.5), 'p99 ms idle': percentile(idleProbe, 0.99) },
          ratio: percentile(idleProbe, 0.99) / percentile(busyProbe, 0.99),
          target: 'p99 < 50 ms',
        },
        {
          scenario: `chain: a change made at the central reaches a waiting long-poll, ${n} box(es) waiting beside it (20 products)`,
          metrics: { 'p50 ms': percentile(feed.delays, 0.5), 'p99 ms': percentile(feed.delays, 0.99) },
          baseline: { 'p50 ms GET /sync/time round trip': percentile(feed.trips, 0.5) },
          ratio: percentile(feed.trips, 0.5) / percentile(feed.delays, 0.5),
          target: 'p99 < 50 ms',
        },
      ],
    };
  } finally {
    await Promise.all(stores.map((s) => (s?.child ? stop(s.child) : undefined)));
    await stop(central);
    rmSync(centralDir, { recursive: true, force: true });
    for (const s of stores) if (s) rmSync(s.dir, { recursive: true, force: true });
  }
}

/** The store's `sync: pushed` debug lines: each push's round trip as the box saw it. */
function collectPushes(s: Store): void {
  let rest = '';
  s.child!.stdout!.on('data', (d: Buffer) => {
    const lines = (rest + d.toString()).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      if (!line.includes('"sync: pushed"')) continue;
      try {
        s.pushes.push(JSON.parse(line).push_ms);
      } catch {
        // not a whole JSON line: ignored
      }
    }
  });
}

export async function inBatches(n: number, width: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, n) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

export function lineMatching(child: ChildProcess, re: RegExp): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', function onData(d: Buffer) {
      text += d;
      const m = re.exec(text);
      if (m) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(m);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${text.slice(-2000)}`)));
  });
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}
