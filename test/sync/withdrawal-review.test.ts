import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { applyHeldRecords, projected } from '../../src/sync/central/projector.js';
import { centralSide } from '../../src/sync/central/sync-store.js';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, appliedAtCentral, http, removeDir, startCentral, startStore, type TestStore } from './helpers.js';
import { tableRows } from './replay.js';

// Issue 32: the central pays withdrawals only from what passed the checks and was applied. A store's
// card payment past `sync.review.per_record_cents` is held for review: nothing of it reaches the
// balance, so a withdrawal of it is refused; released by an operator, it is applied and can be paid out.
const cleanup: Array<() => Promise<void> | void> = [];
let central: TestServer;
let store: TestStore;
let acct: ReturnType<typeof addStoreAccount>;

beforeAll(async () => {
  central = await startCentral({ config: { sync: { review: { per_record_cents: 15_000, per_day_cents: 0 } } } });
  cleanup.push(() => central.stop());
  acct = addStoreAccount(central);
  store = await startStore(central.url, acct.key);
  cleanup.push(() => removeDir(store.dataDir));
  cleanup.push(() => store.stop());
}, 60_000);
afterAll(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** A card payment settled on the box's terminal: a `terminal_payment` record with its ledger charge row. */
async function cardPayment(amount: number) {
  const co = await http('POST', `${store.url}/api/checkouts`, acct.key, { items: [{ name: `Sale ${amount}`, amount_in_cents: amount }], currency: 'GTQ' });
  expect(co.status).toBe(201);
  const account = new AccountsService(store.daemon.ctx.db, store.daemon.ctx.clock).account(acct.accountId)!;
  return settleCheckoutPayment(store.daemon.ctx, account, {
    checkoutId: co.body.id,
    method: 'terminal',
    outcome: 'succeeded',
    card: { network: 'visa', last4: '4242' },
  });
}

const available = async () => {
  const res = await http('GET', `${central.url}/api/balances`, acct.key);
  return (res.body as Array<{ currency: string; available_in_cents: number }>).find((b) => b.currency === 'GTQ')?.available_in_cents ?? 0;
};

describe('withdrawals at the central', () => {
  it('never pay out a held record: only what passed the checks and was applied counts', async () => {
    const small = await cardPayment(10_000);
    const big = await cardPayment(50_000);
    await appliedAtCentral(store);
    const heldRow = tableRows<{ id: string; outcome: string; reason: string }>(
      central,
      "SELECT id, outcome, reason FROM sync_received WHERE kind = 'terminal_payment' AND payload LIKE ?",
      `%${big.paymentIntentId}%`,
    )[0];
    expect(heldRow).toMatchObject({ outcome: 'held', reason: expect.stringContaining('review: held_for_review') });
    const net = (id: string) => tableRows<{ net: number }>(central, 'SELECT net_amount_in_cents AS net FROM balance_transactions WHERE id = ?', id)[0]?.net;
    // The small payment is in the balance; the held one posted nothing.
    expect(net(small.balanceTransactionId!)).toBeGreaterThan(0);
    expect(net(big.balanceTransactionId!)).toBeUndefined();
    const before = await available();
    expect(before).toBe(net(small.balanceTransactionId!));

    const bank = await http('POST', `${central.url}/api/bank_accounts`, acct.key, {
      holder_name: 'Ana',
      number: '1234-5678',
      bank_name: 'Banrural',
      currency: 'GTQ',
      account_type: 'monetaria',
      is_preferred: true,
    });
    expect(bank.status).toBe(201);
    const withdraw = (amount: number) =>
      http('POST', `${central.url}/api/withdrawals`, acct.key, { amount_in_cents: amount, currency: 'GTQ', bank_account_id: bank.body.id });
    // One cent more than what passed is refused, whatever the box says it took.
    const over = await withdraw(before + 1);
    expect(over.status).toBe(422);
    expect(over.body.code).toBe('insufficient_funds');
    expect(await available()).toBe(before);

    // Released by an operator: applied, and now it can be paid out (and not a cent more).
    expect(centralSide(central.daemon.ctx.db).releaseReview(heldRow.id, 'checked with the store', new Date().toISOString())).toBe(true);
    applyHeldRecords(central.daemon.ctx);
    await projected(central.daemon.ctx);
    const after = await available();
    expect(after).toBe(before + net(big.balanceTransactionId!));
    expect((await withdraw(after + 1)).status).toBe(422);
    const wd = await withdraw(after);
    expect(wd.status).toBe(201);
    expect(await available()).toBe(0);
  }, 60_000);
});
