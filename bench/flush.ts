import { join } from 'node:path';
import autocannon from 'autocannon';
import { systemClock } from '../src/clock.js';
import type { AppContext } from '../src/context.js';
import { openDatabase, tx } from '../src/db/database.js';
import { AccountsService } from '../src/accounts/service.js';
import { postBalanceTransaction } from '../src/modules/ledger/service.js';
import { initBenchData, startBaseline, startBenchDaemon, type BenchDaemon, type BenchResult } from './lib.js';

/**
 * Every write path that answers a request, under the flush-latency harness (`underFlushDelay` in
 * lib.ts: each fsync/fdatasync of the daemon returns 0, 2 or 5 ms late, as a store box's disk), at
 * 20 writing connections. Each path's throughput at 2 and 5 ms is printed as a ratio of its own
 * 0 ms throughput measured in the same run (goal: >= 0.8 at 2 ms; at 5 ms >= 0.6, or 0.8 of the
 * 4,000/s ceiling if that is lower: issue 38); cash sales and transfers also beside their raw baselines under the same delay. Then the p99 of a
 * GET /account made alongside 20 connections creating checkouts at 5 ms (goal: < 20 ms).
 *
 * `npm run bench -- flush`; POSD_BENCH_FLUSH_MS=0,5 picks the delays, POSD_BENCH_FLUSH_PATHS=transfers,refunds the paths;
 * POSD_BENCH_FLUSH_KEYED=1 sends each measured request with an Idempotency-Key of its own, as a till
 * retrying over a flaky network does (decision 0287).
 */

const CONNECTIONS = 20;
/** Prepared objects a path consumes one per request (checkouts to pay, payments to refund). */
const POOL = Number(process.env.POSD_BENCH_FLUSH_POOL ?? 3000);

type Data = Awaited<ReturnType<typeof initBenchData>>;

interface Path {
  name: string;
  /** Raw baseline server (bench/baselines) doing the same kind of write, run under the same delay. */
  baseline?: { script: string; path: string; body: string };
  /** Done at full speed before the measured daemon starts; returns what `next` hands out. */
  prepare?: (data: Data, d: BenchDaemon) => Promise<unknown>;
  next: (prepared: any, i: number) => { path: string; body: string };
  /** Requests per run when each consumes a prepared object. */
  amount?: number;
}

function headersFor(d: { keys: { test: string } }) {
  return { 'content-type': 'application/json', 'x-secret-key': d.keys.test };
}

/** Funds the sandbox account straight in the file (the daemon runs beside it in its own process). */
function fund(data: Data): string {
  const db = openDatabase(join(data.dataDir, 'posd.db'), { migrate: false });
  try {
    const accounts = new AccountsService(db, systemClock);
    const recipient = accounts.createAccount({ name: 'Recipient', organizationId: data.ids.organization_id }).sandbox.id;
    const ctx = { db, clock: systemClock } as unknown as AppContext;
    tx(db, () =>
      postBalanceTransaction(ctx, {
        accountId: data.ids.sandbox_id,
        liveMode: false,
        type: 'adjustment',
        amountInCents: 1e12,
        feeInCents: 0,
        currency: 'GTQ',
        sourceId: 'bench_funding',
        sourceType: 'bench',
      }),
    );
    return recipient;
  } finally {
    db.close();
  }
}

async function post(d: BenchDaemon, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${d.url}/api${path}`, { method: 'POST', headers: headersFor(d), body: JSON.stringify(body) });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`prepare: POST ${path} answered ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** `n` calls of `fn` at most `width` at a time. */
async function pool<T>(n: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

const checkoutBody = JSON.stringify({ items: [{ name: 'Coffee', amount_in_cents: 1500, quantity: 2 }], currency: 'GTQ' });
const runId = Date.now().toString(36);

const PATHS: Path[] = [
  {
    name: 'cash sales',
    baseline: { script: 'cash-sale-server', path: '/api/cash_sales', body: JSON.stringify({ amount_in_cents: 2500, currency: 'GTQ' }) },
    next: () => ({ path: '/api/cash_sales', body: JSON.stringify({ amount_in_cents: 2500, currency: 'GTQ', description: 'Two coffees' }) }),
  },
  { name: 'checkouts', next: () => ({ path: '/api/checkouts', body: checkoutBody }) },
  {
    name: 'checkout payments',
    amount: POOL,
    prepare: async (_data, d) => pool(POOL, 20, async () => (await post(d, '/checkouts', JSON.parse(checkoutBody))).id as string),
    next: (ids: string[], i) => ({ path: `/api/test_helpers/checkouts/${ids[i]}/pay`, body: JSON.stringify({ method: 'card', outcome: 'succeeded' }) }),
  },
  {
    name: 'refunds',
    amount: POOL,
    prepare: async (_data, d) =>
      pool(POOL, 20, async () => {
        const c = await post(d, '/checkouts', JSON.parse(checkoutBody));
        return (await post(d, `/test_helpers/checkouts/${c.id}/pay`, { method: 'card', outcome: 'succeeded' })).payment_intent_id as string;
      }),
    next: (ids: string[], i) => ({ path: '/api/refunds', body: JSON.stringify({ payment_intent_id: ids[i] }) }),
  },
  {
    name: 'transfers',
    baseline: { script: 'transfer-server', path: '/api/transfers', body: JSON.stringify({ amount_in_cents: 1, currency: 'GTQ', recipient_id: 'recipient' }) },
    prepare: async (data) => fund(data),
    next: (recipient: string) => ({ path: '/api/transfers', body: JSON.stringify({ amount_in_cents: 1, currency: 'GTQ', recipient_id: recipient }) }),
  },
  {
    name: 'withdrawals',
    prepare: async (data, d) => {
      fund(data);
      const bank = await post(d, '/bank_accounts', {
        holder_name: 'Tienda',
        number: '0123456789',
        bank_name: 'Banrural',
        currency: 'GTQ',
        account_type: 'monetaria',
      });
      return bank.id as string;
    },
    next: (bank: string) => ({ path: '/api/withdrawals', body: JSON.stringify({ amount_in_cents: 1, currency: 'GTQ', bank_account_id: bank }) }),
  },
  {
    name: 'terminal commands',
    prepare: async (_data, d) => (await post(d, '/terminals', { name: 'Till' })).id as string,
    next: (terminal: string, i) => ({
      path: '/api/terminal_session_commands',
      body: JSON.stringify({ terminal_id: terminal, external_id: `bench-${runId}-${i}`, amount_in_cents: 1000 }),
    }),
  },
  { name: 'customers', next: (_p, i) => ({ path: '/api/customers', body: JSON.stringify({ email: `c${runId}-${i}@example.com` }) }) },
  {
    name: 'products',
    next: (_p, i) => ({
      path: '/api/products',
      body: JSON.stringify({ product: { name: `Item ${i}`, prices_attributes: [{ amount_in_cents: 1000, currency: 'GTQ' }] } }),
    }),
  },
];

/** Issue 38's goals beside the raw baseline on the fast disk. */
const RAW_TARGET: Record<string, string> = { transfers: '>= 0.7', 'cash sales': '>= 0.75, p99 < 25 ms' };

/**
 * Issue 38: at a flush of `ms`, a write path reaches 0.6 of its own fast-disk rate or 0.8 of the
 * ceiling the 20 connections allow (20 / ms commits a second: 4,000/s at 5 ms), whichever is lower;
 * issue 18's 0.8 at 2 ms stays. Printed as a ratio of the 0 ms rate, so the lower goal shows as such.
 */
function flushTarget(ms: number, zeroRps: number): string {
  const share = ms <= 2 ? 0.8 : 0.6;
  const ceiling = 0.8 * (CONNECTIONS / ms) * 1000;
  const needed = Math.min(share * zeroRps, ceiling);
  const why = `${share} of own 0 ms rate or 0.8 of the ${Math.round((CONNECTIONS / ms) * 1000)}/s ceiling, whichever lower`;
  return `>= ${(needed / zeroRps).toFixed(2)} (${Math.round(needed)} req/s: ${why})`;
}

interface Measured {
  rps: number;
  p99: number;
  non2xx: number;
  errors: number;
}

const KEYED = process.env.POSD_BENCH_FLUSH_KEYED === '1';

async function measure(
  url: string,
  headers: Record<string, string>,
  next: (i: number) => { path: string; body: string },
  amount?: number,
  keyed = false,
): Promise<Measured> {
  let i = 0;
  const result = await autocannon({
    url,
    method: 'POST',
    headers,
    connections: CONNECTIONS,
    ...(amount ? { amount } : { duration: Number(process.env.POSD_BENCH_SECONDS ?? 5) }),
    requests: [
      {
        setupRequest: (req: autocannon.Request) => {
          const n = next(i++);
          return { ...req, path: n.path, body: n.body, ...(keyed ? { headers: { ...headers, 'idempotency-key': `bench-${runId}-${i}` } } : {}) };
        },
      },
    ],
  });
  return { rps: result.requests.total / Math.max(result.duration, 0.001), p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors };
}

async function measurePath(p: Path, delayMs: number): Promise<Measured> {
  const data = await initBenchData();
  let prepared: unknown;
  if (p.prepare) {
    const prep = await startBenchDaemon({}, { data, keep: true });
    try {
      prepared = await p.prepare(data, prep);
    } finally {
      await prep.stop();
    }
  }
  const d = await startBenchDaemon({}, { data, flushDelayMs: delayMs });
  try {
    const m = await measure(d.url, headersFor(d), (i) => p.next(prepared, i), p.amount, KEYED);
    if (m.non2xx || m.errors) throw new Error(`${p.name} at ${delayMs} ms: ${m.non2xx} non-2xx, ${m.errors} errors`);
    return m;
  } finally {
    await d.stop();
  }
}

async function measureBaseline(b: NonNullable<Path['baseline']>, delayMs: number): Promise<Measured> {
  const server = await startBaseline(b.script, {}, delayMs);
  try {
    return await measure(server.url, { 'content-type': 'application/json' }, () => ({ path: b.path, body: b.body }));
  } finally {
    await server.stop();
  }
}

/** GET /account's p99 on one connection while 20 connections create checkouts, at `delayMs`. */
async function readerBesideWriters(delayMs: number): Promise<{ readP99: number; readMax: number; writeRps: number }> {
  const d = await startBenchDaemon({}, { flushDelayMs: delayMs });
  try {
    const seconds = Number(process.env.POSD_BENCH_SECONDS ?? 5);
    const [writers, reader] = await Promise.all([
      autocannon({ url: `${d.url}/api/checkouts`, method: 'POST', headers: headersFor(d), body: checkoutBody, connections: CONNECTIONS, duration: seconds }),
      autocannon({ url: `${d.url}/api/account`, headers: headersFor(d), connections: 1, duration: seconds }),
    ]);
    if (writers.non2xx || reader.non2xx) throw new Error(`reader beside writers: ${writers.non2xx} + ${reader.non2xx} non-2xx`);
    return { readP99: reader.latency.p99, readMax: reader.latency.max, writeRps: writers.requests.total / writers.duration };
  } finally {
    await d.stop();
  }
}

export async function run(): Promise<BenchResult[]> {
  const delays = (process.env.POSD_BENCH_FLUSH_MS ?? '0,2,5').split(',').map(Number);
  const only = process.env.POSD_BENCH_FLUSH_PATHS?.split(',');
  const results: BenchResult[] = [];
  for (const p of PATHS) {
    if (only && !only.some((o) => p.name.includes(o))) continue;
    // Back to back, so the box's load from other work is as alike as it can be for the ratio.
    const at = new Map<number, Measured>();
    const raw = new Map<number, Measured>();
    for (const ms of delays) {
      at.set(ms, await measurePath(p, ms));
      if (p.baseline) raw.set(ms, await measureBaseline(p.baseline, ms));
      process.stdout.write(
        `    ${p.name} at ${ms} ms: ${Math.round(at.get(ms)!.rps)} req/s, p99 ${at.get(ms)!.p99} ms` +
          (raw.has(ms) ? `; raw ${Math.round(raw.get(ms)!.rps)} req/s, p99 ${raw.get(ms)!.p99} ms` : '') +
          '\n',
      );
    }
    const zero = at.get(delays[0])!;
    for (const ms of delays) {
      const m = at.get(ms)!;
      const r = raw.get(ms);
      if (ms !== delays[0]) {
        results.push({
          scenario: `${p.name}${KEYED ? ' with Idempotency-Key' : ''}, ${CONNECTIONS} connections, flush ${ms} ms vs ${delays[0]} ms`,
          metrics: { 'req/s': m.rps, 'p99 ms': m.p99 },
          baseline: { [`req/s at ${delays[0]} ms`]: zero.rps, [`p99 ms at ${delays[0]} ms`]: zero.p99 },
          ratio: m.rps / zero.rps,
          target: flushTarget(ms, zero.rps),
        });
      }
      if (r) {
        results.push({
          scenario: `${p.name}, ${CONNECTIONS} connections, flush ${ms} ms, beside raw under the same delay`,
          metrics: { 'req/s': m.rps, 'p99 ms': m.p99 },
          baseline: { 'req/s': r.rps, 'p99 ms': r.p99 },
          ratio: m.rps / r.rps,
          target: ms === 0 && RAW_TARGET[p.name] ? RAW_TARGET[p.name] : 'report',
        });
      }
    }
  }
  if (!only || only.some((o) => 'account'.includes(o))) {
    const ms = delays.includes(5) ? 5 : delays[delays.length - 1];
    const r = await readerBesideWriters(ms);
    results.push({
      scenario: `GET /account (1 connection) beside ${CONNECTIONS} connections creating checkouts, flush ${ms} ms: ratio is 20 ms over its p99`,
      metrics: { 'read p99 ms': r.readP99, 'read max ms': r.readMax, 'writes req/s': r.writeRps },
      baseline: { 'goal p99 ms': 20 },
      ratio: 20 / Math.max(r.readP99, 1),
      target: '>= 1 (p99 < 20 ms)',
    });
  }
  return results;
}
