import { load, startBaseline, startBenchDaemon, type BenchResult } from './lib.js';

/** One second of the same load first on each side, uncounted (decision 0271). */
const WARMUP = 1;

/** GET /api/account at 50 connections against a raw node:http + better-sqlite3 key lookup and read. */
export async function run(): Promise<BenchResult[]> {
  const key = 'sk_test_baselinebaselinebaselinebase';
  const baseline = await startBaseline('account-server', { BASELINE_KEY: key });
  const raw = await load({ url: `${baseline.url}/api/account`, headers: { 'x-secret-key': key }, warmupSeconds: WARMUP });
  await baseline.stop();

  const daemon = await startBenchDaemon();
  const posd = await load({ url: `${daemon.url}/api/account`, headers: { 'x-secret-key': daemon.keys.test }, warmupSeconds: WARMUP });
  await daemon.stop();
  if (posd.non2xx || posd.errors) throw new Error(`GET /api/account answered ${posd.non2xx} non-2xx and ${posd.errors} errors`);

  return [
    {
      scenario: 'GET /api/account, 50 connections',
      metrics: { 'req/s': posd.rps, 'p50 ms': posd.p50, 'p99 ms': posd.p99 },
      baseline: { 'req/s': raw.rps, 'p50 ms': raw.p50, 'p99 ms': raw.p99 },
      ratio: posd.rps / raw.rps,
      target: '>= 0.75 (issue 38)',
    },
  ];
}
