import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { BenchResult } from './lib.js';
import { startPgCluster, type PgCluster } from '../test/helpers/pg-cluster.js';
import { createPool, migrate } from '../src/sync/pg/index.js';
import { recordHash } from '../src/sync/shared/wire.js';
import { records } from '../test/sync/pg/records.js';

/**
 * Push receipt on PostgreSQL (issue 19 step 5): records/s durably received by 1 and 3 fronts (each
 * a worker thread with its own pool, 6 stores in all pushing 500-record batches at once), beside a
 * raw set-based `unnest` insert of the same rows into the same table (no store lock, no checks, no
 * totals; hashes computed before the clock) through as many connections as pushes run at once (6). A throw-away cluster,
 * fsync on; a fresh database per run. Applying (the projector) is not measured here yet.
 */
const STORES = 6;
const BATCHES = 10;
const BATCH = 500;
const TOTAL = STORES * BATCHES * BATCH;

async function fronts(cluster: PgCluster, db: string, n: number): Promise<{ rate: number; p50: number; p99: number }> {
  const config = await cluster.createDatabase(db);
  const pool = createPool(config);
  await migrate(pool);
  await pool.end();
  const stores = Array.from({ length: STORES }, (_, i) => `st_${db}_${i}`);
  const workers = Array.from({ length: n }, (_, f) => {
    const mine = stores.filter((_, i) => i % n === f);
    return new Worker(new URL('./central-pg-front.js', import.meta.url), { workerData: { config, stores: mine, batches: BATCHES, batchSize: BATCH } });
  });
  await Promise.all(workers.map((w) => once(w, 'message')));
  const t0 = performance.now();
  const done = workers.map((w) => once(w, 'message') as Promise<[number[]]>);
  for (const w of workers) w.postMessage('go');
  const latencies = (await Promise.all(done)).flatMap(([l]) => l).sort((a, b) => a - b);
  const ms = performance.now() - t0;
  await Promise.all(workers.map((w) => w.terminate()));
  return { rate: (TOTAL / ms) * 1000, p50: latencies[Math.floor(latencies.length * 0.5)], p99: latencies[Math.floor(latencies.length * 0.99)] };
}

async function raw(cluster: PgCluster, db: string, connections: number): Promise<number> {
  const config = await cluster.createDatabase(db);
  const pool = createPool({ ...config, max: connections });
  await migrate(pool);
  const batches: unknown[][] = [];
  for (let s = 0; s < STORES; s++) {
    const storeId = `st_${db}_${s}`;
    for (let b = 0; b < BATCHES; b++) {
      const recs = records(storeId, b * BATCH + 1, (b + 1) * BATCH);
      const json = recs.map((r) => JSON.stringify(r.payload));
      batches.push([
        storeId,
        recs.map((r) => r.seq),
        recs.map((r) => r.id),
        recs.map((r) => r.account_id),
        recs.map((r) => r.live_mode),
        recs.map((r) => r.kind),
        recs.map((r, i) => recordHash(r, json[i])),
        json,
        recs.map((r) => r.created_at),
      ]);
    }
  }
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < batches.length) {
        const params = batches[next++];
        await pool.query(
          `INSERT INTO sync_received (store_id, seq, id, account_id, live_mode, kind, hash, payload, created_at)
           SELECT $1, t.seq, t.id, t.account_id, t.live_mode, t.kind, decode(t.hash, 'hex'), t.payload, t.created_at
           FROM unnest($2::bigint[], $3::text[], $4::text[], $5::boolean[], $6::text[], $7::text[], $8::text[], $9::text[])
             AS t(seq, id, account_id, live_mode, kind, hash, payload, created_at)`,
          params,
        );
      }
    }),
  );
  const ms = performance.now() - t0;
  await pool.end();
  return (TOTAL / ms) * 1000;
}

export async function run(): Promise<BenchResult[]> {
  const cluster = await startPgCluster();
  const out: BenchResult[] = [];
  try {
    for (const n of [1, 3]) {
      const posd = await fronts(cluster, `fronts${n}`, n);
      const baseline = await raw(cluster, `raw${n}`, STORES);
      out.push({
        scenario: `central-pg: ${TOTAL} records received by ${n} front${n > 1 ? 's' : ''} (${STORES} stores pushing ${BATCH}-record batches at once), PostgreSQL ${cluster.host}`,
        metrics: { 'records/s received': posd.rate, 'push p50 ms': posd.p50, 'push p99 ms': posd.p99 },
        baseline: { [`records/s raw unnest insert, ${STORES} connections`]: baseline },
        ratio: posd.rate / baseline,
        target: 'printed only (receipt = lock + checks + insert + totals; raw = the insert alone)',
      });
    }
  } finally {
    await cluster.stop();
  }
  return out;
}
