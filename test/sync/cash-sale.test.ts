import { afterEach, describe, expect, it } from 'vitest';
import { CentralClient } from '../../src/sync/store/transport.js';
import { reconcileDay } from '../../src/sync/store/reconcile.js';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, http, removeDir, startCentral, startStore, type TestStore, appliedAtCentral } from './helpers.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function pair(): Promise<{ central: TestServer; store: TestStore; acct: ReturnType<typeof addStoreAccount> }> {
  const central = await startCentral();
  cleanup.push(() => central.stop());
  const acct = addStoreAccount(central);
  const store = await startStore(central.url, acct.key);
  cleanup.push(() => removeDir(store.dataDir));
  cleanup.push(() => store.stop());
  return { central, store, acct };
}

describe('cash sales made at the store', () => {
  it('exist at the central with the same intent, cash intent and checkout ids, once, with their events under the same ids', async () => {
    const { central, store, acct } = await pair();
    const sales = [];
    for (let i = 0; i < 5; i++) {
      const res = await http('POST', `${store.url}/api/cash_sales`, acct.key, { amount_in_cents: 1500 + i, currency: 'GTQ', description: `Sale ${i}` });
      expect(res.status).toBe(201);
      sales.push(res.body);
    }
    await appliedAtCentral(store);
    for (const sale of sales) {
      const atStore = await http('GET', `${store.url}/api/intents/${sale.id}`, acct.key);
      const atCentral = await http('GET', `${central.url}/api/intents/${sale.id}`, acct.key);
      expect(atCentral.status).toBe(200);
      expect(atCentral.body).toMatchObject({
        id: sale.id,
        amount_in_cents: atStore.body.amount_in_cents,
        currency: 'GTQ',
        status: atStore.body.status,
        created_at: atStore.body.created_at,
      });
      expect(JSON.stringify(atCentral.body)).toContain(sale.checkout.id);
    }
    const q = "SELECT id FROM events WHERE type = 'intent.succeeded' ORDER BY id";
    const storeEvents = store.daemon.ctx.db.prepare(q).all();
    expect(storeEvents).toHaveLength(5);
    expect(central.daemon.ctx.db.prepare(q).all()).toEqual(storeEvents);
    expect((central.daemon.ctx.db.prepare('SELECT count(*) AS n FROM cash_intents').get() as { n: number }).n).toBe(5);

    const client = new CentralClient(central.url, acct.key, { timeoutMs: 5000 });
    cleanup.push(() => client.close());
    const day = sales[0].created_at.slice(0, 10);
    const rec = await reconcileDay(store.daemon.ctx, client, day);
    expect(rec.state).toBe('equal');
    expect(rec.rows.find((r) => r.measure === 'records.cash_sale')).toMatchObject({
      currency: 'GTQ',
      store_count: 5,
      central_count: 5,
      store_sum: 7510,
      central_sum: 7510,
    });
  });
});
