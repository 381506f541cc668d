import { join } from 'node:path';
import { systemClock } from '../src/clock.js';
import type { AppContext } from '../src/context.js';
import { openDatabase, tx } from '../src/db/database.js';
import { AccountsService } from '../src/accounts/service.js';
import { postBalanceTransaction } from '../src/modules/ledger/service.js';
import { load, startBaseline, startBenchDaemon, type BenchResult } from './lib.js';

/**
 * POST /api/transfers (a peer-to-peer transfer: two ledger rows, the transfer, two events and a sync
 * record in one transaction) at 10 connections, against node:http + better-sqlite3 doing the same
 * writes with the same durability (bench/baselines/transfer-server.ts).
 */
/** One second of the same load first on each side, uncounted (decision 0271). */
const WARMUP = 1;

export async function run(): Promise<BenchResult[]> {
  // FULL is what a store runs (a sale survives a power cut); NORMAL takes the disk flush out, so
  // what is left is posd's own cost per transfer.
  return [await scenario('FULL'), await scenario('NORMAL')];
}

async function scenario(synchronous: 'FULL' | 'NORMAL'): Promise<BenchResult> {
  const baseline = await startBaseline('transfer-server', { BASELINE_SYNCHRONOUS: synchronous });
  const body = (recipient: string) => JSON.stringify({ amount_in_cents: 1, currency: 'GTQ', recipient_id: recipient });
  const raw = await load({
    url: `${baseline.url}/api/transfers`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body('recipient'),
    connections: 10,
    warmupSeconds: WARMUP,
  });
  await baseline.stop();

  const daemon = await startBenchDaemon({ POSD_DATABASE_SYNCHRONOUS: synchronous });
  // The daemon runs in its own process; setup writes to the same WAL database beside it.
  const db = openDatabase(join(daemon.dataDir, 'posd.db'), { migrate: false });
  let recipient: string;
  try {
    const accounts = new AccountsService(db, systemClock);
    recipient = accounts.createAccount({ name: 'Recipient', organizationId: daemon.ids.organization_id }).sandbox.id;
    const ctx = { db, clock: systemClock } as unknown as AppContext;
    tx(db, () =>
      postBalanceTransaction(ctx, {
        accountId: daemon.ids.sandbox_id,
        liveMode: false,
        type: 'adjustment',
        amountInCents: 1e12,
        feeInCents: 0,
        currency: 'GTQ',
        sourceId: 'bench_funding',
        sourceType: 'bench',
      }),
    );
  } finally {
    db.close();
  }
  const posd = await load({
    url: `${daemon.url}/api/transfers`,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-secret-key': daemon.keys.test },
    body: body(recipient),
    connections: 10,
    warmupSeconds: WARMUP,
  });
  await daemon.stop();
  if (posd.non2xx || posd.errors) throw new Error(`POST /api/transfers answered ${posd.non2xx} non-2xx and ${posd.errors} errors`);

  return {
    scenario: `POST /api/transfers (peer), 10 connections, synchronous=${synchronous}`,
    metrics: { 'req/s': posd.rps, 'p50 ms': posd.p50, 'p99 ms': posd.p99 },
    baseline: { 'req/s': raw.rps, 'p50 ms': raw.p50, 'p99 ms': raw.p99 },
    ratio: posd.rps / raw.rps,
    target: '>= 0.7 (issue 38)',
  };
}
