import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { until } from '../helpers.js';
import { killStarted, posd, removeTempDirs, requireBuild, startDaemonProcess, tempDir as tmp, type DaemonProcess } from './processes.js';

// A central killed (SIGKILL) after it received a store's pushes and before its projector applied
// any of them (the projector paused by config), then started again with the projector running:
// every record is applied once, and the two ledgers, sales and events agree row for row.

const SALES = 300;
let centralDir: string;
let storeDir: string;
let accountId: string;
let key: string;
let central: DaemonProcess | undefined;
let store: DaemonProcess | undefined;

async function call(method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method,
    headers: { 'x-secret-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

const centralConfig = (paused: boolean) => ({ role: 'central', limits: { per_key_per_second: 100_000 }, sync: { projector_paused: paused } });
const storeRow = async () => ((await call('GET', `${central!.url}/sync/stores`)).body as Array<{ received_seq: number; applied_seq: number }>)[0];

beforeAll(async () => {
  requireBuild();
  centralDir = tmp('posd-central-');
  const inst = await posd(['init', '--role', 'central', '--name', 'Chain', '--json', '--data', centralDir]);
  accountId = (await posd(['accounts', 'create', '--name', 'Store 9', '--organization', inst.organization_id, '--json', '--data', centralDir])).account_id;
  key = (await posd(['keys', 'create', '--account', accountId, '--env', 'live', '--json', '--data', centralDir])).key;
  central = await startDaemonProcess(centralDir, centralConfig(true));
  storeDir = tmp('posd-store-');
  await posd(['init', '--central-url', central.url, '--central-key', key, '--json', '--data', storeDir]);
}, 60_000);

afterAll(async () => {
  await store?.kill('SIGTERM');
  await central?.kill('SIGTERM');
  await killStarted();
  removeTempDirs();
});

describe('a central killed between receipt and projection', () => {
  it('resumes projecting at its next start and applies every record once; the ledgers agree row for row', async () => {
    // The store sells offline first (no central to reach), so its push is a catch-up of many batches.
    store = await startDaemonProcess(storeDir, {
      role: 'store',
      limits: { per_key_per_second: 100_000 },
      sync: { central_url: 'http://127.0.0.1:9', batch_size: 40, reconcile_interval_ms: 0 },
    });
    for (let i = 0; i < SALES; i++) {
      const sale = await call('POST', `${store.url}/api/cash_sales`, { amount_in_cents: 100 + i, currency: 'GTQ' });
      expect(sale.status).toBe(201);
    }
    await store.kill('SIGTERM');
    store = await startDaemonProcess(storeDir, {
      role: 'store',
      sync: { central_url: central!.url, batch_size: 40, backoff_min_ms: 20, backoff_max_ms: 200, reconcile_interval_ms: 0 },
    });
    // Everything received (the store has nothing waiting), nothing applied.
    await until('the store has nothing waiting', async () => (await call('GET', `${store!.url}/sync/status`)).body.records_waiting === 0, 60_000);
    const received = await storeRow();
    expect(received.received_seq).toBeGreaterThanOrEqual(2 * SALES);
    expect(received.applied_seq).toBe(0);
    const peek = new Database(join(centralDir, 'posd.db'), { readonly: true });
    try {
      expect(peek.prepare('SELECT outcome, count(*) AS n FROM sync_received GROUP BY outcome').all()).toEqual([
        { outcome: 'received', n: received.received_seq },
      ]);
      expect(peek.prepare('SELECT count(*) AS n FROM intents').get()).toEqual({ n: 0 });
    } finally {
      peek.close();
    }

    await central!.kill('SIGKILL');
    central = await startDaemonProcess(centralDir, centralConfig(false));
    await until(
      'the central applied everything it received',
      async () => {
        const row = await storeRow();
        return row.applied_seq === received.received_seq;
      },
      60_000,
    );
    await store.kill('SIGTERM');
    store = undefined;

    const storeDb = new Database(join(storeDir, 'posd.db'), { readonly: true });
    const centralDb = new Database(join(centralDir, 'posd.db'), { readonly: true });
    try {
      expect(centralDb.prepare('SELECT outcome, count(*) AS n FROM sync_received GROUP BY outcome').all()).toEqual([
        { outcome: 'applied', n: received.received_seq },
      ]);
      const salesQ = 'SELECT id, type, status, amount_in_cents, currency, checkout_id, created_at FROM intents WHERE account_id = ? ORDER BY id';
      const sales = storeDb.prepare(salesQ).all(accountId);
      expect(sales).toHaveLength(SALES);
      expect(centralDb.prepare(salesQ).all(accountId)).toEqual(sales);
      const ledgerQ =
        'SELECT id, type, amount_in_cents, fee_in_cents, net_amount_in_cents, currency, source_id, source_type, created_at FROM balance_transactions WHERE account_id = ? ORDER BY id';
      const ledger = storeDb.prepare(ledgerQ).all(accountId);
      expect(centralDb.prepare(ledgerQ).all(accountId)).toEqual(ledger);
      // Each store event re-emitted once at the central, under its own id.
      const eventsQ = "SELECT id, type FROM events WHERE account_id = ? AND (type LIKE 'intent.%' OR type LIKE 'cash_intent.%') ORDER BY id";
      const events = storeDb.prepare(eventsQ).all(accountId);
      expect(events.length).toBeGreaterThanOrEqual(SALES);
      expect(centralDb.prepare(eventsQ).all(accountId)).toEqual(events);
    } finally {
      storeDb.close();
      centralDb.close();
    }
  }, 180_000);
});
