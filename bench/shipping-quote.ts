import { request } from 'undici';
import { load, startBaseline, startBenchDaemon, type BenchResult } from './lib.js';

const CATALOGUE = [
  {
    code: 'GT',
    requires_region: true,
    options: [
      {
        id: 'standard',
        name: 'Envío',
        kind: 'delivery',
        currency: 'GTQ',
        amount_in_cents: 4500,
        free_from_amount_in_cents: 50000,
        maximum_business_days: 3,
        region_amounts: [{ regions: ['GT-01', 'GT-03'], amount_in_cents: 2500 }],
      },
      { id: 'pickup', name: 'Recoger', kind: 'pickup', currency: 'GTQ', amount_in_cents: 0, free_from_amount_in_cents: null },
    ],
  },
];
const QUOTE = JSON.stringify({ country: 'GT', region: 'Sacatepéquez', currency: 'GTQ', subtotal_in_cents: 12000 });

/** POST /api/store_shipping (a quote with region folding) at 50 connections, against a raw node:http + SQLite quote. */
export async function run(): Promise<BenchResult[]> {
  const key = 'sk_test_baselinebaselinebaselinebase';
  const baseline = await startBaseline('shipping-quote-server', { BASELINE_KEY: key, BASELINE_CATALOGUE: JSON.stringify(CATALOGUE) });
  const headers = { 'content-type': 'application/json' };
  const raw = await load({ url: `${baseline.url}/api/store_shipping`, method: 'POST', headers: { ...headers, 'x-secret-key': key }, body: QUOTE });
  await baseline.stop();

  const daemon = await startBenchDaemon();
  const setup = await request(`${daemon.url}/api/store_shipping/settings`, {
    method: 'PUT',
    headers: { ...headers, 'x-secret-key': daemon.keys.test },
    body: JSON.stringify({ enabled: true, destinations: CATALOGUE }),
  });
  await setup.body.dump();
  if (setup.statusCode !== 200) throw new Error(`saving the catalogue answered ${setup.statusCode}`);
  const posd = await load({ url: `${daemon.url}/api/store_shipping`, method: 'POST', headers: { ...headers, 'x-secret-key': daemon.keys.test }, body: QUOTE });
  await daemon.stop();
  if (posd.non2xx || posd.errors) throw new Error(`POST /api/store_shipping answered ${posd.non2xx} non-2xx and ${posd.errors} errors`);

  return [
    {
      scenario: 'POST /api/store_shipping quote, 50 connections',
      metrics: { 'req/s': posd.rps, 'p50 ms': posd.p50, 'p99 ms': posd.p99 },
      baseline: { 'req/s': raw.rps, 'p50 ms': raw.p50, 'p99 ms': raw.p99 },
      ratio: posd.rps / raw.rps,
      target: '>= 0.5',
    },
  ];
}
