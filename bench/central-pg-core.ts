import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { request } from 'undici';
import { MAIN, type BenchResult } from './lib.js';
import { percentile, probeSales } from './sync.js';
import { startPgCluster } from '../test/helpers/pg-cluster.js';
import { validateConfig } from '../src/config.js';
import { createContext, startDaemon } from '../src/daemon.js';
import { accountsOf } from '../src/accounts/service.js';
import { applyPush, syncScope } from '../src/sync/central/service.js';
import { projected, projectorWorker } from '../src/sync/central/projector.js';
import { centralSide } from '../src/sync/central/sync-store.js';
import { pgCoreOf } from '../src/sync/central/pg-core-slot.js';
import { createPool, migrate, receivePush } from '../src/sync/pg/index.js';
import type { PushRecord } from '../src/sync/shared/wire.js';

/**
 * The chain's core applying what fronts received (issue 19 step 5): RECORDS event records of one
 * store already received in PostgreSQL, then the core started: the time until PostgreSQL says every
 * record applied (ingest into the core's SQLite, the step-4 projector, the report back). Beside it,
 * the same records received at a SQLite-only central and its projector started: the time until it
 * applied them all. Both centrals in this process, made by the CLI; a throw-away cluster, fsync on.
 * The core runs as the daemon (HTTP on port 0, every worker); its own `POST /api/cash_sales` is
 * timed during the catch-up (issue 33: p99 < 50 ms) beside the same probe once it is idle, and
 * its event loop's delay meanwhile (what any request waits behind).
 */
const RECORDS = 10_000;
const BATCH = 1000;
const STORE = 'st_bench_core';

const run$ = promisify(execFile);
const posd = async (args: string[]) => JSON.parse((await run$(process.execPath, [MAIN, ...args, '--json'])).stdout);

async function centralDir(): Promise<{ dir: string; accountId: string; key: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'posd-bench-core-'));
  const inst = await posd(['init', '--role', 'central', '--data', dir]);
  const acct = await posd(['accounts', 'create', '--name', 'Store', '--organization', inst.organization_id, '--data', dir]);
  return { dir, accountId: acct.account_id, key: inst.keys.live };
}

function records(accountId: string): PushRecord[] {
  return Array.from({ length: RECORDS }, (_, i) => {
    const id = `msg_core_${i + 1}`;
    return {
      seq: i + 1,
      prev_seq: i,
      id: `sync_${id}`,
      kind: 'event',
      account_id: accountId,
      live_mode: true,
      payload: { id, type: 'intent.succeeded', payload: { id: `pi_${i + 1}` }, created_at: '2026-03-02T10:00:00.000Z' },
      created_at: '2026-03-02T10:00:00.000Z',
    };
  });
}

/**
 * How long PostgreSQL's applied figure trailed the core's own: for each sample of the core's
 * applied_seq (its SQLite), the time until PostgreSQL said as much; the longest, in ms.
 */
function trailMs(samples: ReadonlyArray<{ t: number; core: number; pg: number }>): number {
  let worst = 0;
  let j = 0;
  for (let i = 0; i < samples.length; i++) {
    // The core's figure only grows: the sample where PostgreSQL caught up only moves forward.
    j = Math.max(j, i);
    while (j < samples.length - 1 && samples[j].pg < samples[i].core) j++;
    worst = Math.max(worst, samples[j].t - samples[i].t);
  }
  return worst;
}

interface CoreRun {
  rate: number;
  trail: number;
  /** The core's own `POST /api/cash_sales`, one at a time, during the catch-up and once it is idle. */
  busy: number[];
  idle: number[];
  /** The core's event loop during the catch-up: how late a timer ran, p99 and longest, in ms. */
  loopP99: number;
  loopMax: number;
  /** CPU of this process (the core, its threads, the probes) per record applied, in µs; the log's round trips and entries. */
  cpuPerRecord: number;
  trips: number;
  entries: number;
  threadEntries: number;
  tripMs: number;
  tripKb: number;
}

/**
 * The core as a daemon in this process (its HTTP port, its workers: the one log, the ingest, the
 * projector, the report), started once the records are in PostgreSQL; its API probed meanwhile.
 */
async function viaPostgres(url: string, poolConfig: object): Promise<CoreRun> {
  const { dir, accountId, key } = await centralDir();
  const pool = createPool({ ...poolConfig, max: 2 });
  await migrate(pool);
  const recs = records(accountId);
  const scope = { keyAccount: { id: accountId, live_mode: true }, accounts: [{ id: accountId, live_mode: true }] };
  for (let i = 0; i < recs.length; i += BATCH) await receivePush(pool, scope, { protocol: 1, store_id: STORE, records: recs.slice(i, i + BATCH) });
  // The core's projector on its own thread, as by default (decision 0311); POSD_BENCH_PROJECTOR_THREAD=0: on the loop.
  const projector_thread = process.env.POSD_BENCH_PROJECTOR_THREAD !== '0';
  const config = validateConfig({ data_dir: dir, role: 'central', http: { host: '127.0.0.1', port: 0 }, sync: { postgres: { url, projector_thread } } });
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const daemon = await startDaemon({ config, log: pino({ level: 'silent' }) });
  const samples: Array<{ t: number; core: number; pg: number }> = [];
  let draining = true;
  let busy: number[] = [];
  const loop = monitorEventLoopDelay({ resolution: 5 });
  try {
    // Writes are answered once the core leads (the log replayed): the probe starts there.
    while ((await request(`${daemon.url}/readyz`).then(async (r) => (await r.body.text(), r.statusCode))) !== 200) await new Promise((r) => setTimeout(r, 10));
    // The first request of a route compiles its validator and serializer (lazily, so the daemon
    // starts fast: issue 16), about 110 ms once after a start (decision 0304) and nothing to do with
    // the catch-up; the idle probe below comes after it too. One untimed sale first.
    await probeSales(daemon.url, key, () => false, 1);
    loop.enable();
    [busy] = await Promise.all([
      probeSales(daemon.url, key, () => draining, Number.POSITIVE_INFINITY),
      (async () => {
        for (;;) {
          const row = (await pool.query('SELECT applied_seq FROM sync_stores WHERE store_id = $1', [STORE])).rows[0];
          samples.push({ t: performance.now(), core: centralSide(daemon.ctx.db).storeRow(STORE)?.applied_seq ?? 0, pg: row?.applied_seq ?? 0 });
          if (row.applied_seq === RECORDS) break;
          await new Promise((r) => setTimeout(r, 10));
        }
      })().finally(() => (draining = false)),
    ]);
  } finally {
    draining = false;
    loop.disable();
  }
  const ms = samples[samples.length - 1].t - t0;
  const cpu = process.cpuUsage(cpu0);
  // Before this change (0276) each entry was its own round trip: the appender's count where there is one.
  const appender = (pgCoreOf(daemon.ctx)?.log_ as { appending?: { trips: number; tripMs: number; chars: number } } | undefined)?.appending;
  const entries = Number((await pool.query('SELECT count(*) AS n FROM central_log')).rows[0].n);
  // The projector thread's own commits (its ingest batches and slices): each a WAL flush and an entry.
  const threadEntries = (pgCoreOf(daemon.ctx)?.log_ as { state?: { threadAppended?: number } } | undefined)?.state?.threadAppended ?? Number.NaN;
  const trips = appender?.trips ?? entries;
  const tripMs = appender ? appender.tripMs / appender.trips : Number.NaN;
  const tripKb = appender ? appender.chars / appender.trips / 1000 : Number.NaN;
  const idle = await probeSales(daemon.url, key, () => false, 2000);
  await daemon.stop();
  await pool.end();
  rmSync(dir, { recursive: true, force: true });
  return {
    rate: (RECORDS / ms) * 1000,
    trail: trailMs(samples),
    busy,
    idle,
    loopP99: loop.percentile(99) / 1e6,
    loopMax: loop.max / 1e6,
    cpuPerRecord: (cpu.user + cpu.system) / RECORDS,
    trips,
    entries,
    threadEntries,
    tripMs,
    tripKb,
  };
}

async function viaSqlite(): Promise<number> {
  const { dir, accountId } = await centralDir();
  const ctx = createContext(validateConfig({ data_dir: dir, role: 'central' }), { log: pino({ level: 'silent' }) });
  const keyAccount = accountsOf(ctx).account(accountId)!;
  const scope = syncScope(accountsOf(ctx), keyAccount);
  const recs = records(accountId);
  for (let i = 0; i < recs.length; i += BATCH) await applyPush(ctx, keyAccount, scope, { protocol: 1, store_id: STORE, records: recs.slice(i, i + BATCH) });
  const projector = projectorWorker(ctx);
  const t0 = performance.now();
  projector.start();
  await projected(ctx);
  const ms = performance.now() - t0;
  await projector.stop();
  ctx.db.close();
  rmSync(dir, { recursive: true, force: true });
  return (RECORDS / ms) * 1000;
}

export async function run(): Promise<BenchResult[]> {
  const cluster = await startPgCluster();
  try {
    const config = await cluster.createDatabase('core');
    const url = cluster.url('core');
    const sqlite = await viaSqlite();
    const load = loadavg()[0].toFixed(1);
    const { rate: pg, trail, busy, idle, loopP99, loopMax, cpuPerRecord, trips, entries, threadEntries, tripMs, tripKb } = await viaPostgres(url, config);
    return [
      {
        scenario: `central-pg-core: ${RECORDS} event records of one store received in PostgreSQL, applied by the core (ingest, project, report); load average ${load}`,
        metrics: {
          'records/s applied (PostgreSQL core)': pg,
          "ms PostgreSQL's applied figure trailed the core's (longest)": trail,
          'CPU µs per record (this process: the core, its threads, the probes)': cpuPerRecord,
          'appends to the central log (round trips)': trips,
          'entries appended': entries,
          "of them the projector thread's (ingest batches and slices; NaN without the thread)": threadEntries,
          'ms per append (the appender; NaN before it)': tripMs,
          'kB of changes per append': tripKb,
        },
        baseline: { 'records/s applied (SQLite central, same records received there)': sqlite },
        ratio: pg / sqlite,
        target: '>= 8,000 records/s applied on one core (issue 33); printed only',
      },
      {
        scenario: `central-pg-core: the core's POST /api/cash_sales during that catch-up (${busy.length} sales, one at a time); load average ${load}`,
        metrics: {
          'p50 ms': percentile(busy, 0.5),
          'p99 ms': percentile(busy, 0.99),
          'event loop delay p99 ms': loopP99,
          'event loop delay longest ms': loopMax,
        },
        baseline: { 'p50 ms, idle core': percentile(idle, 0.5), 'p99 ms, idle core': percentile(idle, 0.99) },
        ratio: percentile(idle, 0.99) / percentile(busy, 0.99),
        target: 'p99 < 50 ms during a catch-up (issue 33)',
      },
    ];
  } finally {
    await cluster.stop();
  }
}
