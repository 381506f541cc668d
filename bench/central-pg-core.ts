import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { MAIN, type BenchResult } from './lib.js';
import { startPgCluster } from '../test/helpers/pg-cluster.js';
import { validateConfig } from '../src/config.js';
import { createContext } from '../src/daemon.js';
import { accountsOf } from '../src/accounts/service.js';
import { applyPush, syncScope } from '../src/sync/central/service.js';
import { projected, projectorWorker } from '../src/sync/central/projector.js';
import { pgCoreWorker } from '../src/sync/central/pg-core.js';
import { centralSide } from '../src/sync/central/sync-store.js';
import { createPool, migrate, receivePush } from '../src/sync/pg/index.js';
import type { PushRecord } from '../src/sync/shared/wire.js';

/**
 * The chain's core applying what fronts received (issue 19 step 5): RECORDS event records of one
 * store already received in PostgreSQL, then the core started: the time until PostgreSQL says every
 * record applied (ingest into the core's SQLite, the step-4 projector, the report back). Beside it,
 * the same records received at a SQLite-only central and its projector started: the time until it
 * applied them all. Both centrals in this process, made by the CLI; a throw-away cluster, fsync on.
 */
const RECORDS = 10_000;
const BATCH = 1000;
const STORE = 'st_bench_core';

const run$ = promisify(execFile);
const posd = async (args: string[]) => JSON.parse((await run$(process.execPath, [MAIN, ...args, '--json'])).stdout);

async function centralDir(): Promise<{ dir: string; accountId: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'posd-bench-core-'));
  const inst = await posd(['init', '--role', 'central', '--data', dir]);
  const acct = await posd(['accounts', 'create', '--name', 'Store', '--organization', inst.organization_id, '--data', dir]);
  return { dir, accountId: acct.account_id };
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

async function viaPostgres(url: string, poolConfig: object): Promise<{ rate: number; trail: number }> {
  const { dir, accountId } = await centralDir();
  const pool = createPool({ ...poolConfig, max: 2 });
  await migrate(pool);
  const recs = records(accountId);
  const scope = { keyAccount: { id: accountId, live_mode: true }, accounts: [{ id: accountId, live_mode: true }] };
  for (let i = 0; i < recs.length; i += BATCH) await receivePush(pool, scope, { protocol: 1, store_id: STORE, records: recs.slice(i, i + BATCH) });
  const ctx = createContext(validateConfig({ data_dir: dir, role: 'central', sync: { postgres: { url } } }), { log: pino({ level: 'silent' }) });
  const workers = [projectorWorker(ctx), pgCoreWorker(ctx)];
  const t0 = performance.now();
  for (const w of workers) await w.start();
  const samples: Array<{ t: number; core: number; pg: number }> = [];
  for (;;) {
    const row = (await pool.query('SELECT applied_seq FROM sync_stores WHERE store_id = $1', [STORE])).rows[0];
    samples.push({ t: performance.now(), core: centralSide(ctx.db).storeRow(STORE)?.applied_seq ?? 0, pg: row?.applied_seq ?? 0 });
    if (row.applied_seq === RECORDS) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const ms = performance.now() - t0;
  for (const w of workers.reverse()) await w.stop();
  await pool.end();
  ctx.db.close();
  rmSync(dir, { recursive: true, force: true });
  return { rate: (RECORDS / ms) * 1000, trail: trailMs(samples) };
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
    const url = `postgresql://${cluster.user}@localhost:${cluster.port}/core?host=${encodeURIComponent(cluster.host)}`;
    const sqlite = await viaSqlite();
    const { rate: pg, trail } = await viaPostgres(url, config);
    return [
      {
        scenario: `central-pg-core: ${RECORDS} event records of one store received in PostgreSQL, applied by the core (ingest, project, report); load average ${loadavg()[0].toFixed(1)}`,
        metrics: { 'records/s applied (PostgreSQL core)': pg, "ms PostgreSQL's applied figure trailed the core's (longest)": trail },
        baseline: { 'records/s applied (SQLite central, same records received there)': sqlite },
        ratio: pg / sqlite,
        target: 'printed only (the core adds the copy from PostgreSQL and the report back to the same projector)',
      },
    ];
  } finally {
    await cluster.stop();
  }
}
