import { afterEach, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { syncStatus } from '../../src/sync/status.js';
import { http, pairStoreAndCentral, until, type TestStore, appliedAtCentral } from './helpers.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function paidAtStore(store: TestStore, acct: { accountId: string; key: string }, amount: number): Promise<string> {
  const account = new AccountsService(store.daemon.ctx.db, store.daemon.ctx.clock).account(acct.accountId)!;
  const co = await http('POST', `${store.url}/api/checkouts`, acct.key, { items: [{ name: 'Refundable', amount_in_cents: amount }], currency: 'GTQ' });
  expect(co.status).toBe(201);
  return settleCheckoutPayment(store.daemon.ctx, account, { checkoutId: co.body.id, method: 'terminal', outcome: 'succeeded' }).paymentIntentId;
}

const ledger = (db: TestStore['daemon']['ctx']['db'], type: string) =>
  db
    .prepare(
      'SELECT id, amount_in_cents, fee_in_cents, net_amount_in_cents, commission_in_cents, source_id, created_at FROM balance_transactions WHERE type = ? ORDER BY id',
    )
    .all(type);

const synced = (store: TestStore) => appliedAtCentral(store);

describe('refunds made at the store', () => {
  it('exist at the central with the same id and the same ledger refund row, once, with their event under the same id', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const pa = await paidAtStore(store, acct, 8000);
    const refund = await http('POST', `${store.url}/api/refunds`, acct.key, { payment_intent_id: pa, reason: 'changed mind' });
    expect(refund.status).toBe(201);
    await synced(store);

    const atCentral = await http('GET', `${central.url}/api/refunds/${refund.body.id}`, acct.key);
    expect(atCentral.status).toBe(200);
    expect(atCentral.body).toEqual(refund.body);
    const storeRows = ledger(store.daemon.ctx.db, 'refund');
    expect(storeRows).toHaveLength(1);
    expect(storeRows[0]).toMatchObject({ amount_in_cents: -8000, source_id: refund.body.id });
    expect(ledger(central.daemon.ctx.db, 'refund')).toEqual(storeRows);
    // The charge and its refund net to zero at the central as at the store.
    const sum = (db: TestStore['daemon']['ctx']['db']) =>
      (db.prepare('SELECT sum(net_amount_in_cents) AS n FROM balance_transactions').get() as { n: number }).n;
    expect(sum(store.daemon.ctx.db)).toBe(0);
    expect(sum(central.daemon.ctx.db)).toBe(0);

    const q = "SELECT id FROM events WHERE type = 'refund.create'";
    const storeEvents = store.daemon.ctx.db.prepare(q).all();
    expect(storeEvents).toHaveLength(1);
    expect(central.daemon.ctx.db.prepare(q).all()).toEqual(storeEvents);
  });

  it('are refused when the central refunded the same payment meanwhile: one refund and one ledger row at the central', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const pa = await paidAtStore(store, acct, 5000);
    await synced(store);
    const atCentral = await http('POST', `${central.url}/api/refunds`, acct.key, { payment_intent_id: pa });
    expect(atCentral.status).toBe(201);
    const atStore = await http('POST', `${store.url}/api/refunds`, acct.key, { payment_intent_id: pa });
    expect(atStore.status).toBe(201);
    await until('the store hears of the refusal', () => syncStatus(store.daemon.ctx.config, store.daemon.ctx.db).rejected_records === 1);

    const rows = ledger(central.daemon.ctx.db, 'refund');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ source_id: atCentral.body.id });
    expect((await http('GET', `${central.url}/api/refunds/${atStore.body.id}`, acct.key)).status).toBe(404);
  });
});
