import { afterEach, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { advanceWithdrawal } from '../../src/modules/transfers/withdrawals.js';
import { syncStatus } from '../../src/sync/status.js';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, http, removeDir, startCentral, startStore, until, type TestStore, appliedAtCentral } from './helpers.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

type Db = TestStore['daemon']['ctx']['db'];

/** A central with a store account and a child account of it (a peer the store knows), and the store box. */
async function setup(): Promise<{ central: TestServer; store: TestStore; acct: ReturnType<typeof addStoreAccount>; childId: string }> {
  const central = await startCentral();
  cleanup.push(() => central.stop());
  const acct = addStoreAccount(central);
  const accounts = new AccountsService(central.daemon.ctx.db, central.daemon.ctx.clock);
  const childId = accounts.createAccount({ name: 'Branch', parentId: acct.accountId }).account.id;
  const store = await startStore(central.url, acct.key);
  cleanup.push(() => removeDir(store.dataDir));
  cleanup.push(() => store.stop());
  return { central, store, acct, childId };
}

async function fund(store: TestStore, accountId: string, key: string, amount: number): Promise<void> {
  const account = new AccountsService(store.daemon.ctx.db, store.daemon.ctx.clock).account(accountId)!;
  const co = await http('POST', `${store.url}/api/checkouts`, key, { items: [{ name: 'Funds', amount_in_cents: amount }], currency: 'GTQ' });
  expect(co.status).toBe(201);
  settleCheckoutPayment(store.daemon.ctx, account, { checkoutId: co.body.id, method: 'terminal', outcome: 'succeeded' });
}

const ledger = (db: Db) =>
  db
    .prepare(
      "SELECT id, account_id, type, amount_in_cents, net_amount_in_cents, source_id, source_type, created_at FROM balance_transactions WHERE type IN ('transfer', 'payout') ORDER BY id",
    )
    .all();
const transfers = (db: Db) => db.prepare('SELECT * FROM transfers ORDER BY id').all();
const bankAccounts = (db: Db) => db.prepare('SELECT * FROM bank_accounts ORDER BY id').all();
const balances = (db: Db) =>
  db.prepare('SELECT account_id, sum(net_amount_in_cents) AS n FROM balance_transactions GROUP BY account_id ORDER BY account_id').all();
const synced = (store: TestStore) => appliedAtCentral(store);

describe('transfers, withdrawals and bank accounts made at the store', () => {
  it('exist at the central with the same ids, states and ledger rows, once, with their events under the same ids', async () => {
    const { central, store, acct, childId } = await setup();
    await fund(store, acct.accountId, acct.key, 50_000);
    const tr = await http('POST', `${store.url}/api/transfers`, acct.key, { recipient_id: childId, amount_in_cents: 7000, currency: 'GTQ', note: 'float' });
    expect(tr.status).toBe(201);
    const bank1 = await http('POST', `${store.url}/api/bank_accounts`, acct.key, {
      holder_name: 'Ana',
      number: '1234-5678',
      bank_name: 'Banrural',
      currency: 'GTQ',
      account_type: 'monetaria',
      is_preferred: true,
    });
    expect(bank1.status).toBe(201);
    const bank2 = await http('POST', `${store.url}/api/bank_accounts`, acct.key, {
      holder_name: 'Ana',
      number: '9999 0000',
      bank_name: 'BAM',
      currency: 'GTQ',
      account_type: 'ahorro',
    });
    expect(bank2.status).toBe(201);
    const paid = await http('POST', `${store.url}/api/withdrawals`, acct.key, { amount_in_cents: 3000, currency: 'GTQ', bank_account_id: bank1.body.id });
    const failed = await http('POST', `${store.url}/api/withdrawals`, acct.key, { amount_in_cents: 2000, currency: 'GTQ', bank_account_id: bank1.body.id });
    expect([paid.status, failed.status]).toEqual([201, 201]);
    const scope = { accountIds: [acct.accountId], liveMode: true };
    advanceWithdrawal(store.daemon.ctx, scope, paid.body.id, 'paid');
    advanceWithdrawal(store.daemon.ctx, scope, failed.body.id, 'failed');
    // The preferred one changes after the withdrawals used the first.
    expect((await http('PATCH', `${store.url}/api/bank_accounts/${bank2.body.id}`, acct.key, { is_preferred: true })).status).toBe(200);
    await synced(store);

    expect(transfers(central.daemon.ctx.db)).toEqual(transfers(store.daemon.ctx.db));
    expect(transfers(central.daemon.ctx.db)).toHaveLength(3);
    const rows = ledger(store.daemon.ctx.db);
    // Debit and credit of the transfer, two payouts and the failed one's return.
    expect(rows).toHaveLength(5);
    expect(ledger(central.daemon.ctx.db)).toEqual(rows);
    expect(balances(central.daemon.ctx.db)).toEqual(balances(store.daemon.ctx.db));
    expect(bankAccounts(central.daemon.ctx.db)).toEqual(bankAccounts(store.daemon.ctx.db));
    expect((bankAccounts(central.daemon.ctx.db) as Array<{ id: string; is_preferred: number }>).find((b) => b.id === bank2.body.id)?.is_preferred).toBe(1);

    for (const path of [`/api/transfers/${tr.body.id}`, `/api/withdrawals/${paid.body.id}`, `/api/withdrawals/${failed.body.id}`]) {
      const atCentral = await http('GET', `${central.url}${path}`, acct.key);
      expect(atCentral.status, path).toBe(200);
      expect(atCentral.body, path).toEqual((await http('GET', `${store.url}${path}`, acct.key)).body);
    }
    const q = "SELECT id FROM events WHERE type LIKE 'transfer.%' OR type LIKE 'withdrawal.%' ORDER BY id";
    const storeEvents = store.daemon.ctx.db.prepare(q).all();
    expect(storeEvents.length).toBeGreaterThanOrEqual(6);
    expect(central.daemon.ctx.db.prepare(q).all()).toEqual(storeEvents);
  });

  it('refuse a withdrawal step the central no longer allows: paid at the central, failed at the store, money not returned twice', async () => {
    const { central, store, acct } = await setup();
    await fund(store, acct.accountId, acct.key, 20_000);
    const bank = await http('POST', `${store.url}/api/bank_accounts`, acct.key, {
      holder_name: 'Ana',
      number: '12345678',
      bank_name: 'Banrural',
      currency: 'GTQ',
      account_type: 'monetaria',
    });
    const wd = await http('POST', `${store.url}/api/withdrawals`, acct.key, { amount_in_cents: 4000, currency: 'GTQ', bank_account_id: bank.body.id });
    expect(wd.status).toBe(201);
    await synced(store);
    const scope = { accountIds: [acct.accountId], liveMode: true };
    advanceWithdrawal(central.daemon.ctx, scope, wd.body.id, 'paid');
    advanceWithdrawal(store.daemon.ctx, scope, wd.body.id, 'failed');
    await until('the store hears of the refusal', () => syncStatus(store.daemon.ctx.config, store.daemon.ctx.db).rejected_records === 1);

    const atCentral = await http('GET', `${central.url}/api/withdrawals/${wd.body.id}`, acct.key);
    expect(atCentral.body.status).toBe('paid');
    const payouts = central.daemon.ctx.db.prepare("SELECT amount_in_cents FROM balance_transactions WHERE type = 'payout' ORDER BY seq").all();
    expect(payouts).toEqual([{ amount_in_cents: -4000 }]);
  });
});
