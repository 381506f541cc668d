import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../helpers/manual-clock.js';
import { syncStatus } from '../../src/sync/status.js';
import { reconcileDay } from '../../src/sync/store/reconcile.js';
import { CentralClient } from '../../src/sync/store/transport.js';
import { ChaosProxy } from './e2e/chaos-proxy.js';
import { projected } from '../../src/sync/central/projector.js';
import { BACKDATED, addStoreAccount, http, removeDir, startCentral, startStore, until } from './helpers.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('a store offline for a whole day', () => {
  it('sells all day with the link down, then pushes every sale and event in order when it returns; the day reconciles equal', async () => {
    const central = await startCentral({ config: BACKDATED });
    cleanup.push(() => central.stop());
    const acct = addStoreAccount(central);
    const link = new ChaosProxy({ host: '127.0.0.1', port: Number(new URL(central.url).port) });
    const linkPort = await link.listen();
    cleanup.push(() => link.close());
    // The business clock of the box: one sale every five minutes from 00:00 to 23:55 UTC.
    const day = '2026-03-02';
    const clock = new ManualClock(Date.parse(`${day}T00:00:00.000Z`));
    const store = await startStore(`http://127.0.0.1:${linkPort}`, acct.key, { clock, sync: { batch_size: 100 } });
    cleanup.push(() => removeDir(store.dataDir));
    cleanup.push(() => store.stop());
    const { db, config } = store.daemon.ctx;

    link.mode = { up: false, cutResponse: 0, delayMs: 0 };
    link.cutAll();
    const SALES = 288;
    for (let i = 0; i < SALES; i++) {
      const res = await http('POST', `${store.url}/api/cash_sales`, acct.key, { amount_in_cents: 1000 + i, currency: 'GTQ' });
      expect(res.status).toBe(201);
      clock.advance(5 * 60_000);
    }
    await until('the link noted down', () => syncStatus(config, db).last_error);
    const offline = syncStatus(config, db);
    expect(offline).toMatchObject({ connected: false, oldest_waiting_at: `${day}T00:00:00.000Z` });
    expect(offline.records_waiting).toBeGreaterThanOrEqual(SALES);
    expect(central.daemon.ctx.db.prepare('SELECT count(*) AS n FROM cash_intents').get()).toEqual({ n: 0 });

    link.mode = { up: true, cutResponse: 0, delayMs: 0 };
    const storeEvents = db.prepare('SELECT id FROM events ORDER BY seq').all() as Array<{ id: string }>;
    await until('everything pushed', () => syncStatus(config, db).records_waiting === 0 && syncStatus(config, db).connected, 30_000);
    // Received; then applied by the central's projector, in the store's order.
    await projected(central.daemon.ctx);

    // In order: the central took the store's records in the store's sequence, none skipped or doubled.
    const outbox = db.prepare('SELECT seq, id FROM sync_outbox ORDER BY seq').all();
    const received = central.daemon.ctx.db.prepare('SELECT seq, id FROM sync_received WHERE store_id = ? ORDER BY seq').all(store.storeId);
    expect(received).toEqual(outbox);
    expect(outbox.length).toBeGreaterThanOrEqual(SALES + storeEvents.length);
    const sales = (d: typeof db) =>
      d.prepare('SELECT id, amount_in_cents, created_at FROM intents ORDER BY created_at, id').all() as Array<{ amount_in_cents: number; created_at: string }>;
    expect(sales(central.daemon.ctx.db)).toEqual(sales(db));
    expect(sales(db).map((s) => s.amount_in_cents)).toEqual(Array.from({ length: SALES }, (_, i) => 1000 + i));
    expect(sales(db)[SALES - 1].created_at).toBe(`${day}T23:55:00.000Z`);
    // The events kept their ids and were re-emitted at the central in the order the store made them.
    const reemitted = central.daemon.ctx.db
      .prepare("SELECT json_extract(payload, '$.id') AS id FROM sync_received WHERE store_id = ? AND kind = 'event' ORDER BY seq")
      .all(store.storeId);
    expect(reemitted).toEqual(storeEvents);

    const client = new CentralClient(central.url, acct.key, { timeoutMs: 5000 });
    cleanup.push(() => client.close());
    const rec = await reconcileDay(store.daemon.ctx, client, day);
    expect(rec.state).toBe('equal');
    expect(rec.rows.find((r) => r.measure === 'intents.cash.succeeded')).toMatchObject({ store_count: SALES, central_count: SALES });
  }, 60_000);
});
