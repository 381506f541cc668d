import { load, startBaseline, startBenchDaemon, type BenchResult } from './lib.js';

/**
 * One second of the same load first on each side, uncounted (decisions 0271, 0245): the first 50
 * requests at a cold daemon all wait for the route's first compile and the JIT, the slowest 1 % of a
 * 5 s run is about 75 requests, so they weighed on its p99.
 */
const WARMUP = 1;

/**
 * POST /api/cash_sales at 50 connections (each sale: a paid checkout, the unified and cash intents,
 * the event and the sync record in one FULL-synchronous transaction) beside a raw node:http +
 * better-sqlite3 server committing one row per request with the same `synchronous` setting.
 */
export async function run(): Promise<BenchResult[]> {
  const synchronous = process.env.POSD_DATABASE_SYNCHRONOUS ?? 'FULL';
  const body = JSON.stringify({ amount_in_cents: 2500, currency: 'GTQ', description: 'Two coffees' });
  const headers = { 'content-type': 'application/json' };

  const baseline = await startBaseline('cash-sale-server', { BASELINE_SYNCHRONOUS: synchronous });
  const raw = await load({ url: `${baseline.url}/api/cash_sales`, method: 'POST', headers, body, warmupSeconds: WARMUP });
  await baseline.stop();

  const daemon = await startBenchDaemon({ POSD_DATABASE_SYNCHRONOUS: synchronous });
  const posd = await load({
    url: `${daemon.url}/api/cash_sales`,
    method: 'POST',
    headers: { ...headers, 'x-secret-key': daemon.keys.test },
    body,
    warmupSeconds: WARMUP,
  });
  await daemon.stop();
  if (posd.non2xx || posd.errors) throw new Error(`POST /api/cash_sales answered ${posd.non2xx} non-2xx and ${posd.errors} errors`);

  return [
    {
      scenario: `POST /api/cash_sales, 50 connections, synchronous=${synchronous}`,
      metrics: { 'req/s': posd.rps, 'p50 ms': posd.p50, 'p99 ms': posd.p99 },
      baseline: { 'req/s': raw.rps, 'p50 ms': raw.p50, 'p99 ms': raw.p99 },
      ratio: posd.rps / raw.rps,
      target: '>= 0.75, p99 < 25 ms (issue 38)',
    },
  ];
}
