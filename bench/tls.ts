import { initBenchData, load, startBenchDaemon, type BenchResult } from './lib.js';

/**
 * GET /api/account and POST /api/cash_sales (the till's hot write) at 50 keep-alive connections
 * over TLS (`tls.mode: on`, the box CA's ECDSA P-256 certificate) beside the same box over plain
 * HTTP, in the same run (issue 39). Keep-alive pays each connection's handshake once, so the ratio
 * is the cost of encrypting requests and answers.
 */
/** Seconds of each load not counted, on both sides: a fresh daemon's first answers (JIT, serializers). */
const WARMUP = 2;

export async function run(): Promise<BenchResult[]> {
  const data = await initBenchData();
  const plainDaemon = await startBenchDaemon({ POSD_TLS_MODE: 'off' }, { data, keep: true });
  const plain = await load({ url: `${plainDaemon.url}/api/account`, headers: { 'x-secret-key': plainDaemon.keys.test }, warmupSeconds: WARMUP });
  const plainSales = await load(sales(plainDaemon.url, plainDaemon.keys.test));
  await plainDaemon.stop();

  const tlsDaemon = await startBenchDaemon({ POSD_TLS_MODE: 'on' }, { data });
  if (!tlsDaemon.url.startsWith('https://')) throw new Error(`the TLS daemon listened on ${tlsDaemon.url}`);
  const tls = await load({ url: `${tlsDaemon.url}/api/account`, headers: { 'x-secret-key': tlsDaemon.keys.test }, warmupSeconds: WARMUP });
  const tlsSales = await load(sales(tlsDaemon.url, tlsDaemon.keys.test));
  await tlsDaemon.stop();
  for (const r of [plain, tls]) if (r.non2xx || r.errors) throw new Error(`GET /api/account answered ${r.non2xx} non-2xx and ${r.errors} errors`);
  for (const r of [plainSales, tlsSales]) if (r.non2xx || r.errors) throw new Error(`POST /api/cash_sales answered ${r.non2xx} non-2xx and ${r.errors} errors`);

  return [
    {
      scenario: 'GET /api/account over TLS, 50 keep-alive connections (baseline: plain HTTP, same box)',
      metrics: { 'req/s': tls.rps, 'p50 ms': tls.p50, 'p99 ms': tls.p99 },
      baseline: { 'req/s': plain.rps, 'p50 ms': plain.p50, 'p99 ms': plain.p99 },
      ratio: tls.rps / plain.rps,
      target: '>= 0.8',
    },
    {
      scenario: 'POST /api/cash_sales over TLS, 50 keep-alive connections (baseline: plain HTTP, same box)',
      metrics: { 'req/s': tlsSales.rps, 'p50 ms': tlsSales.p50, 'p99 ms': tlsSales.p99 },
      baseline: { 'req/s': plainSales.rps, 'p50 ms': plainSales.p50, 'p99 ms': plainSales.p99 },
      ratio: tlsSales.rps / plainSales.rps,
      target: '>= 0.8',
    },
  ];
}

function sales(url: string, key: string) {
  return {
    url: `${url}/api/cash_sales`,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json', 'x-secret-key': key },
    body: JSON.stringify({ amount_in_cents: 2500, currency: 'GTQ', description: 'Two coffees' }),
    warmupSeconds: WARMUP,
  };
}
