import { afterEach, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { tx } from '../../src/db/database.js';
import { applyStoreBalancePayment, type BalancePaymentRecord } from '../../src/modules/payments/sync.js';
import { CentralClient } from '../../src/sync/store/transport.js';
import { reconcileDay } from '../../src/sync/store/reconcile.js';
import { syncStatus } from '../../src/sync/status.js';
import { addStoreAccount, appliedAtCentral, http, removeDir, startCentral, startStore, until, type TestStore } from './helpers.js';

// Issue 15: a checkout paid at a store from another account's balance reaches the central as one
// `balance_payment` record: both sides' ledger rows and intents written there once, under the store's
// ids, the events re-emitted, and the day reconciles row for row. Its refund credits the payer back,
// at the store and at the central.

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

type Db = TestStore['daemon']['ctx']['db'];
const ledger = (db: Db, origin: string | null, ids: string[]) =>
  db
    .prepare(
      `SELECT id, account_id, type, amount_in_cents, fee_in_cents, net_amount_in_cents, currency, source_id, source_type, created_at FROM balance_transactions
       WHERE origin IS ? AND account_id IN (${ids.map(() => '?').join(',')}) ORDER BY id`,
    )
    .all(origin, ...ids);
const intents = (db: Db, origin: string | null, ids: string[]) =>
  db
    .prepare(
      `SELECT id, account_id, type, status, legacy_id, payment_id, amount_in_cents, currency, checkout_id, details, created_at FROM intents
       WHERE origin IS ? AND account_id IN (${ids.map(() => '?').join(',')}) ORDER BY id`,
    )
    .all(origin, ...ids);

async function setUp() {
  const central = await startCentral();
  cleanup.push(() => central.stop());
  const acct = addStoreAccount(central);
  // The payer: a connected child of the store's account (in the store key's scope), its sandbox with a key.
  const accounts = new AccountsService(central.daemon.ctx.db, central.daemon.ctx.clock);
  const child = accounts.createAccount({ name: 'Farmacia Central', parentId: acct.accountId });
  const payerKey = accounts.createKey({ accountId: child.sandbox.id, environment: 'test' }).key;
  const store = await startStore(central.url, acct.key);
  cleanup.push(() => removeDir(store.dataDir));
  cleanup.push(() => store.stop());
  const client = new CentralClient(central.url, acct.key, { timeoutMs: 5000 });
  cleanup.push(() => client.close());
  const synced = () => appliedAtCentral(store);
  return { central, store, acct, client, synced, merchant: acct.sandboxId, payer: child.sandbox.id, payerKey, merchantKey: acct.testKey };
}

async function checkout(url: string, key: string, amount: number): Promise<string> {
  const co = await http('POST', `${url}/api/checkouts`, key, { items: [{ name: 'Tratamiento', amount_in_cents: amount }], currency: 'GTQ' });
  expect(co.status, JSON.stringify(co.body)).toBe(201);
  return co.body.id;
}

describe('balance payments made at a store', () => {
  it('reach the central with both sides (ledger rows, intents, events) once, refunds credit the payer back there too, and the day reconciles', async () => {
    const { central, store, acct, client, synced, merchant, payer, payerKey, merchantKey } = await setUp();
    const ids = [merchant, payer];
    // The payer earns a balance by a card sale of its own at the store.
    const own = await checkout(store.url, payerKey, 50_000);
    expect((await http('POST', `${store.url}/api/test_helpers/checkouts/${own}/pay`, payerKey, { method: 'card', outcome: 'succeeded' })).status).toBe(200);

    const ch = await checkout(store.url, merchantKey, 30_000);
    const paid = await http('POST', `${store.url}/api/test_helpers/checkouts/${ch}/pay_with_balance`, merchantKey, { payer_account_id: payer });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body.status).toBe('succeeded');
    // A short balance: failed, nothing moved; its payment intent and intent reach the central all the same.
    const shortCo = await checkout(store.url, merchantKey, 1_000_000);
    const failed = await http('POST', `${store.url}/api/test_helpers/checkouts/${shortCo}/pay_with_balance`, merchantKey, { payer_account_id: payer });
    expect(failed.body.status).toBe('failed');
    await synced();

    const sdb = store.daemon.ctx.db;
    const cdb = central.daemon.ctx.db;
    const storeRows = ledger(sdb, null, ids);
    expect(storeRows.map((r: any) => `${r.account_id === payer ? 'payer' : 'merchant'}:${r.type}:${r.amount_in_cents}`).sort()).toEqual([
      'merchant:charge:30000',
      'payer:charge:50000',
      'payer:payment:-30000',
    ]);
    expect(ledger(cdb, store.storeId, ids)).toEqual(storeRows);
    const storeIntents = intents(sdb, null, ids);
    expect(storeIntents.map((r: any) => `${r.type}:${r.status}`).sort()).toEqual(['balance:failed', 'balance:paid', 'balance:succeeded', 'payment:succeeded']);
    expect(intents(cdb, store.storeId, ids)).toEqual(storeIntents);
    // Each side reads its part at the central as at the store.
    const pa = paid.body.payment_intent_id;
    for (const [key, path] of [
      [merchantKey, `/api/payment_intents/${pa}`],
      [merchantKey, `/api/checkouts/${ch}`],
      [payerKey, `/api/balance_transactions?type=payment`],
    ] as const) {
      const atStore = await http('GET', `${store.url}${path}`, key);
      const atCentral = await http('GET', `${central.url}${path}`, key);
      expect(atCentral.status, path).toBe(200);
      const strip = (b: any) => (Array.isArray(b) ? b.map(({ balance_after_in_cents: _b, ...r }: any) => r) : (({ url: _u, ...r }) => r)(b));
      expect(strip(atCentral.body), path).toEqual(strip(atStore.body));
    }
    expect(cdb.prepare('SELECT * FROM balance_payments').all()).toEqual(sdb.prepare('SELECT * FROM balance_payments').all());
    // The store's events are the central's: intent.succeeded to the merchant, intent.paid to the payer, same ids.
    const ev = "SELECT id, type, account_id FROM events WHERE type LIKE 'intent.%' AND account_id IN (?, ?) ORDER BY id";
    const storeEvents = sdb.prepare(ev).all(merchant, payer);
    expect(storeEvents.map((e: any) => e.type).sort()).toEqual(['intent.failed', 'intent.paid', 'intent.succeeded', 'intent.succeeded']);
    await until('events re-emitted at the central', () => cdb.prepare(ev).all(merchant, payer).length === storeEvents.length);
    expect(cdb.prepare(ev).all(merchant, payer)).toEqual(storeEvents);

    // The refund: the merchant debited, the payer credited back, at the store and then at the central.
    const balance = async (url: string, key: string) =>
      ((await http('GET', `${url}/api/balances`, key)).body as any[]).find((b) => b.currency === 'GTQ').available_in_cents;
    const payerBefore = await balance(store.url, payerKey);
    const refund = await http('POST', `${store.url}/api/refunds`, merchantKey, { payment_intent_id: pa });
    expect(refund.status, JSON.stringify(refund.body)).toBe(201);
    expect(await balance(store.url, payerKey)).toBe(payerBefore + 30_000);
    const credit = sdb.prepare("SELECT * FROM balance_transactions WHERE account_id = ? AND type = 'refund'").get(payer) as any;
    expect(credit).toMatchObject({ amount_in_cents: 30_000, fee_in_cents: 0, source_id: refund.body.id, source_type: 'refund' });
    expect(sdb.prepare("SELECT type FROM events WHERE type = 'refund.create' AND account_id = ?").all(merchant)).toHaveLength(1);
    await synced();
    expect(ledger(cdb, store.storeId, ids)).toEqual(ledger(sdb, null, ids));
    expect(await balance(central.url, payerKey)).toBe(await balance(store.url, payerKey));
    expect(await balance(central.url, merchantKey)).toBe(await balance(store.url, merchantKey));

    const day = (storeRows[0] as { created_at: string }).created_at.slice(0, 10);
    const rec = await reconcileDay(store.daemon.ctx, client, day);
    expect(rec.differences).toEqual([]);
    expect(rec.state).toBe('equal');
    const m = (account: string, measure: string, currency = 'GTQ') =>
      rec.rows.find((r) => r.account_id === account && r.measure === measure && r.currency === currency);
    // A failed payment is counted without an amount (no currency), as for other payments.
    expect(m(merchant, 'records.balance_payment')).toMatchObject({ store_count: 1, central_count: 1, store_sum: 30_000, central_sum: 30_000 });
    expect(m(merchant, 'records.balance_payment', '')).toMatchObject({ store_count: 1, central_count: 1 });
    expect(m(payer, 'ledger.payment')).toMatchObject({ store_count: 1, central_count: 1, store_sum: -30_000, central_sum: -30_000 });
    expect(m(payer, 'ledger.refund')).toMatchObject({ store_count: 1, central_count: 1, store_sum: 30_000 });
    expect(m(payer, 'intents.balance.paid')).toMatchObject({ store_count: 1, central_count: 1, central_sum: 30_000 });
    expect(m(merchant, 'intents.balance.failed')).toMatchObject({ store_count: 1, central_count: 1 });
    expect(syncStatus(store.daemon.ctx.config, sdb).rejected_records).toBe(0);

    // The same record applied again (say, under another record id after a restore) writes nothing twice.
    const rec0 = sdb.prepare("SELECT payload FROM sync_outbox WHERE kind = 'balance_payment' ORDER BY seq LIMIT 1").get() as { payload: string };
    const before = ledger(cdb, store.storeId, ids).length;
    const centralMerchant = new AccountsService(cdb, central.daemon.ctx.clock).account(merchant)!;
    tx(cdb, () => applyStoreBalancePayment(central.daemon.ctx, centralMerchant, acct.accountId, JSON.parse(rec0.payload)));
    expect(ledger(cdb, store.storeId, ids)).toHaveLength(before);
    expect(intents(cdb, store.storeId, ids)).toEqual(intents(sdb, null, ids));
    // A box taking its own record back after a restore (rejoin: the record's account stands for the
    // key) applies it with any payer it holds; it holds these rows already, so nothing is written.
    const pushed = sdb.prepare("SELECT * FROM sync_outbox WHERE kind = 'balance_payment' ORDER BY seq LIMIT 1").get() as any;
    const storeRowsBefore = ledger(sdb, null, ids);
    tx(sdb, () =>
      store.daemon.ctx.registry.sync.applier('balance_payment')!(
        store.daemon.ctx,
        { ...pushed, live_mode: false, prev_seq: 0, payload: JSON.parse(pushed.payload) },
        { storeId: store.storeId, keyAccountId: merchant, restoring: true },
      ),
    );
    expect(ledger(sdb, null, ids)).toEqual(storeRowsBefore);
  });

  it('is refused at the central when the payer is not an account of the pushing store', async () => {
    const { central, store, synced, merchant, payer, payerKey, merchantKey } = await setUp();
    const own = await checkout(store.url, payerKey, 5_000);
    await http('POST', `${store.url}/api/test_helpers/checkouts/${own}/pay`, payerKey, { method: 'card', outcome: 'succeeded' });
    const ch = await checkout(store.url, merchantKey, 1_000);
    expect((await http('POST', `${store.url}/api/test_helpers/checkouts/${ch}/pay_with_balance`, merchantKey, { payer_account_id: payer })).status).toBe(200);
    await synced();
    const rec = JSON.parse(
      (store.daemon.ctx.db.prepare("SELECT payload FROM sync_outbox WHERE kind = 'balance_payment'").get() as { payload: string }).payload,
    ) as BalancePaymentRecord;
    // Another store account's key pushing the same facts under new ids: its scope does not hold the payer.
    const cdb = central.daemon.ctx.db;
    const other = addStoreAccount(central, 'Store 2');
    const otherSandbox = new AccountsService(cdb, central.daemon.ctx.clock).account(other.sandboxId)!;
    const forged: BalancePaymentRecord = { ...rec, payment_intent: { ...rec.payment_intent, id: 'pa_forged' } };
    const before = (cdb.prepare('SELECT count(*) AS n FROM balance_transactions').get() as { n: number }).n;
    const reason = tx(cdb, () => applyStoreBalancePayment(central.daemon.ctx, otherSandbox, other.accountId, forged));
    expect(reason).toMatch(/^payer sbx_\w+ of balance payment pa_forged is not an account of this store at the central$/);
    expect((cdb.prepare('SELECT count(*) AS n FROM balance_transactions').get() as { n: number }).n).toBe(before);
    expect(merchant).not.toBe(other.sandboxId);
  });
});
