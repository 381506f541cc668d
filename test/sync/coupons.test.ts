import { afterEach, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { CentralClient } from '../../src/sync/store/transport.js';
import { reconcileDay } from '../../src/sync/store/reconcile.js';
import type { TestServer } from '../helpers/server.js';
import { http, pairStoreAndCentral, type TestStore, appliedAtCentral } from './helpers.js';
import { replayAtCentral, tableRows } from './replay.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const synced = (store: TestStore) => appliedAtCentral(store);

/** A checkout carrying the code, paid (the payment counts the redemption in its transaction). */
async function paidWithCode(box: TestServer | TestStore, url: string, acct: { accountId: string; key: string }, code: string): Promise<string> {
  const co = await http('POST', `${url}/api/checkouts`, acct.key, {
    items: [{ name: 'Corte', amount_in_cents: 10_000 }],
    currency: 'GTQ',
    coupon_codes: [code],
  });
  expect(co.status, JSON.stringify(co.body)).toBe(201);
  expect(co.body.amount_in_cents).toBe(8_000);
  const account = new AccountsService(box.daemon.ctx.db, box.daemon.ctx.clock).account(acct.accountId)!;
  settleCheckoutPayment(box.daemon.ctx, account, { checkoutId: co.body.id, method: 'terminal', outcome: 'succeeded' });
  return co.body.id;
}

describe('coupons made and redeemed at the store', () => {
  it('exist at the central with the store’s ids; each redemption counts once, even past the central’s limit, and weighs its discount in the totals', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const made = await http('POST', `${store.url}/api/coupons`, acct.key, { name: 'MENOS20', amount_off_in_cents: 2_000, currency: 'GTQ', max_redemptions: 1 });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const changed = await http('PATCH', `${store.url}/api/coupons/${made.body.id}`, acct.key, { minimum_amount_in_cents: 5_000 });
    expect(changed.status).toBe(200);
    await synced(store);
    const atCentral = await http('GET', `${central.url}/api/coupons/${made.body.id}`, acct.key);
    expect(atCentral.status).toBe(200);
    expect(atCentral.body).toEqual((await http('GET', `${store.url}/api/coupons/${made.body.id}`, acct.key)).body);
    expect(atCentral.body).toMatchObject({ minimum_amount_in_cents: 5_000, times_redeemed: 0, status: 'active' });

    // The central sells with the code itself (its limit is reached there), and the store, not yet
    // told, sells with it too: the sale happened, so its redemption is recorded all the same.
    await paidWithCode(central, central.url, acct, 'menos20');
    await paidWithCode(store, store.url, acct, 'MENOS20');
    await synced(store);
    const after = await http('GET', `${central.url}/api/coupons/${made.body.id}`, acct.key);
    expect(after.body).toMatchObject({ times_redeemed: 2, max_redemptions: 1, status: 'exhausted' });
    const storeRedemption = tableRows<{ id: string }>(store, 'SELECT id, checkout_id, amount_off_in_cents, created_at FROM coupon_redemptions');
    expect(storeRedemption).toHaveLength(1);
    expect(tableRows(central, 'SELECT id, checkout_id, amount_off_in_cents, created_at FROM coupon_redemptions WHERE id = ?', storeRedemption[0].id)).toEqual(
      storeRedemption,
    );

    const client = new CentralClient(central.url, acct.key, { timeoutMs: 5000 });
    cleanup.push(() => client.close());
    const rec = await reconcileDay(store.daemon.ctx, client, made.body.created_at.slice(0, 10));
    expect(rec.rows.find((r) => r.measure === 'records.coupon_redemption')).toMatchObject({
      currency: 'GTQ',
      store_count: 1,
      central_count: 1,
      store_sum: 2_000,
      central_sum: 2_000,
    });
    expect(rec.rows.find((r) => r.measure === 'records.coupon')).toMatchObject({ store_count: 2, central_count: 2, store_sum: 0, central_sum: 0 });

    const before = [tableRows(central, 'SELECT * FROM coupons ORDER BY rowid'), tableRows(central, 'SELECT * FROM coupon_redemptions ORDER BY rowid')];
    const replayed = await replayAtCentral(central, store, acct.key, ['coupon', 'coupon_redemption']);
    expect(replayed.rejected).toEqual([]);
    expect([tableRows(central, 'SELECT * FROM coupons ORDER BY rowid'), tableRows(central, 'SELECT * FROM coupon_redemptions ORDER BY rowid')]).toEqual(before);
  });
});
