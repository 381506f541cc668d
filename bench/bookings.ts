import autocannon from 'autocannon';
import { request } from 'undici';
import { startBaseline, startBenchDaemon, type BenchResult, type LoadResult } from './lib.js';

/** Each request books the next free hour of one stylist: every request succeeds and the occupancy grows. */
async function bookLoad(url: string, headers: Record<string, string>, fields: Record<string, unknown>): Promise<LoadResult & { created: number }> {
  let n = 0;
  const base = Date.parse('2030-01-01T00:00:00Z');
  const result = await autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    connections: 50,
    duration: Number(process.env.POSD_BENCH_SECONDS ?? 5),
    requests: [
      {
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ ...fields, starts_at: new Date(base + n++ * 3_600_000).toISOString() }) }),
      },
    ],
  });
  return {
    rps: result.requests.average,
    total: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    created: result['2xx'],
  };
}

/**
 * POST /api/bookings at 50 connections, each for the next hour of one stylist (the availability
 * check, the customer lookup, the booking, its occupancy and the sync record in one IMMEDIATE,
 * FULL-synchronous transaction) beside a raw node:http + better-sqlite3 server doing the same
 * overlap check and two inserts per request.
 */
export async function run(): Promise<BenchResult[]> {
  const synchronous = process.env.POSD_DATABASE_SYNCHRONOUS ?? 'FULL';
  const baseline = await startBaseline('booking-server', { BASELINE_SYNCHRONOUS: synchronous });
  const raw = await bookLoad(`${baseline.url}/api/bookings`, {}, { staff_member_id: 'stf_baseline' });
  await baseline.stop();

  const daemon = await startBenchDaemon({ POSD_DATABASE_SYNCHRONOUS: synchronous });
  const key = { 'x-secret-key': daemon.keys.test, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown) => {
    const res = await request(`${daemon.url}/api${path}`, { method: 'POST', headers: key, body: JSON.stringify(body) });
    const json = (await res.body.json()) as { id: string };
    if (res.statusCode !== 201) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(json)}`);
    return json;
  };
  const svc = await post('/services', { kind: 'appointment', name: 'Haircut', duration_minutes: 60, price_in_cents: 15_000 });
  const staff = await post('/staff_members', { name: 'Ana' });
  const posd = await bookLoad(
    `${daemon.url}/api/bookings`,
    { 'x-secret-key': daemon.keys.test },
    {
      service_id: svc.id,
      staff_member_id: staff.id,
      customer: { email: 'bench@example.com', name: 'Bench' },
    },
  );
  await daemon.stop();
  if (posd.non2xx || posd.errors) throw new Error(`POST /api/bookings answered ${posd.non2xx} non-2xx and ${posd.errors} errors`);

  return [
    {
      scenario: `POST /api/bookings (next free hour of one stylist), 50 connections, synchronous=${synchronous}`,
      metrics: { 'req/s': posd.rps, 'p50 ms': posd.p50, 'p99 ms': posd.p99, bookings: posd.created },
      baseline: { 'req/s': raw.rps, 'p50 ms': raw.p50, 'p99 ms': raw.p99, bookings: raw.created },
      ratio: posd.rps / raw.rps,
      target: '>= 0.4, p99 < 50 ms',
    },
  ];
}
