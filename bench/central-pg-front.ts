import { parentPort, workerData } from 'node:worker_threads';
import { createPool, receivePush } from '../src/sync/pg/index.js';
import type { ReceiptScope } from '../src/sync/pg/index.js';
import { push, records } from '../test/sync/pg/records.js';

/**
 * One "front" of bench/central-pg.ts in its own thread (its own event loop and CPU for hashing, as a
 * front process has): its own pool, its stores pushing their batches one after another, all stores
 * at once. Builds the bodies first, says `ready`, runs on `go`, answers each push's latency.
 */
const { config, stores, batches, batchSize } = workerData as { config: object; stores: string[]; batches: number; batchSize: number };
const scope: ReceiptScope = { keyAccount: { id: 'ac_one', live_mode: true }, accounts: [{ id: 'ac_one', live_mode: true }] };
const totals = { totalsOf: (_k: string, p: Record<string, unknown>) => ({ currency: String(p.currency), amount_in_cents: Number(p.amount_in_cents) }) };
const bodies = new Map(stores.map((s) => [s, Array.from({ length: batches }, (_, b) => push(s, records(s, b * batchSize + 1, (b + 1) * batchSize)))]));
const pool = createPool({ ...config, max: stores.length });

parentPort!.once('message', async () => {
  const latencies: number[] = [];
  await Promise.all(
    stores.map(async (s) => {
      for (const body of bodies.get(s)!) {
        const t = performance.now();
        await receivePush(pool, scope, body, { totals });
        latencies.push(performance.now() - t);
      }
    }),
  );
  await pool.end();
  parentPort!.postMessage(latencies);
});
parentPort!.postMessage('ready');
