import { afterEach, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { syncStatus } from '../../src/sync/status.js';
import { applyFeedPage } from '../../src/sync/store/feed.js';
import { CentralClient } from '../../src/sync/store/transport.js';
import { startTestServer } from '../helpers/server.js';
import { addStoreAccount, http, pairStoreAndCentral, removeDir, startStore, until, type TestStore } from './helpers.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

type Db = TestStore['daemon']['ctx']['db'];
const row = (db: Db, table: string, id: string) => db.prepare(`SELECT * FROM ${table} WHERE id = ?`).get(id) as Record<string, unknown> | undefined;
const outboxMax = (db: Db) => (db.prepare('SELECT coalesce(max(seq), 0) AS m FROM sync_outbox').get() as { m: number }).m;
const eventCount = (db: Db) => (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
const balanceOf = async (url: string, key: string) =>
  ((await http('GET', `${url}/api/balances`, key)).body as Array<{ currency: string; available_in_cents: number }>).find((b) => b.currency === 'GTQ')
    ?.available_in_cents ?? 0;
/** The ledger rows as both sides must hold them: everything but the running balance (each side keeps its own). */
const ledgerRows = (db: Db, accountId: string) =>
  db
    .prepare(
      'SELECT id, type, amount_in_cents, fee_in_cents, net_amount_in_cents, currency, commission_in_cents, vat_withheld_in_cents, source_id, source_type, created_at FROM balance_transactions WHERE account_id = ? ORDER BY id',
    )
    .all(accountId);

describe('the feed carries what the central made to the store', () => {
  it('an online payment, its ledger row, intent and invoice URL, a bank account and a payout reach the box with the same ids, and nothing goes back', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const sdb = store.daemon.ctx.db;
    const cdb = central.daemon.ctx.db;
    const outboxBefore = outboxMax(sdb);
    const eventsBefore = eventCount(sdb);

    // Online, at the central, in the sandbox (the test helper pays as a processor would).
    const co = await http('POST', `${central.url}/api/checkouts`, acct.testKey, { items: [{ name: 'Online', amount_in_cents: 20_000 }], currency: 'GTQ' });
    expect(co.status).toBe(201);
    const paid = await http('POST', `${central.url}/api/test_helpers/checkouts/${co.body.id}/pay`, acct.testKey, { method: 'card', outcome: 'succeeded' });
    expect(paid.status).toBe(200);
    const bank = await http('POST', `${central.url}/api/bank_accounts`, acct.testKey, {
      holder_name: 'Ana',
      number: '1234-5678',
      bank_name: 'Banrural',
      currency: 'GTQ',
      account_type: 'monetaria',
      is_preferred: true,
    });
    expect(bank.status).toBe(201);
    const wd = await http('POST', `${central.url}/api/withdrawals`, acct.testKey, { amount_in_cents: 5000, currency: 'GTQ', bank_account_id: bank.body.id });
    expect(wd.status).toBe(201);
    const url = 'https://dte.example/inv/1';
    expect((await http('PATCH', `${central.url}/api/payment_intents/${paid.body.payment_intent_id}`, acct.testKey, { tax_invoice_url: url })).status).toBe(200);

    await until('the invoice URL at the box', () => row(sdb, 'intents', paid.body.intent_id)?.tax_invoice_url === url);
    // Same ids, amounts and fee; the payout too; the bank account with its whole row.
    expect(ledgerRows(sdb, acct.sandboxId)).toEqual(ledgerRows(cdb, acct.sandboxId));
    expect(ledgerRows(sdb, acct.sandboxId)).toHaveLength(2);
    expect(row(sdb, 'balance_transactions', paid.body.balance_transaction_id)).toMatchObject({ type: 'charge', amount_in_cents: 20_000 });
    // Each side numbers its receipts; `origin` says where each side got the row (reconciliation).
    const { receipt_number: _r1, origin: boxOrigin, ...intentAtBox } = row(sdb, 'intents', paid.body.intent_id)!;
    const { receipt_number: _r2, origin: centralOrigin, ...intentAtCentral } = row(cdb, 'intents', paid.body.intent_id)!;
    expect(intentAtBox).toEqual(intentAtCentral);
    expect([boxOrigin, centralOrigin]).toEqual(['central', null]);
    expect(row(sdb, 'bank_accounts', bank.body.id)).toEqual(row(cdb, 'bank_accounts', bank.body.id));
    expect(await balanceOf(store.url, acct.testKey)).toBe(await balanceOf(central.url, acct.testKey));
    expect(await balanceOf(store.url, acct.testKey)).toBe(20_000 - 900 - 5000);
    const viaApi = await http('GET', `${store.url}/api/intents/${paid.body.intent_id}`, acct.testKey);
    expect(viaApi.status).toBe(200);
    expect(viaApi.body.tax_invoice_url).toBe(url);

    // Applied, not re-pushed, and no events at the box: the central had them all.
    expect(outboxMax(sdb)).toBe(outboxBefore);
    expect(eventCount(sdb)).toBe(eventsBefore);

    // The same changes applied again (a cursor moved back, a page repeated) change nothing.
    const before = { ledger: ledgerRows(sdb, acct.sandboxId), bank: row(sdb, 'bank_accounts', bank.body.id), intent: row(sdb, 'intents', paid.body.intent_id) };
    const client = new CentralClient(central.url, acct.key, { timeoutMs: 5000 });
    const page = await client.feed(0, 0, undefined, store.storeId);
    await client.close();
    expect(page.changes.map((c) => c.kind)).toEqual(expect.arrayContaining(['balance_transaction', 'intent', 'bank_account', 'tax_invoice_url']));
    sdb.prepare("UPDATE sync_state SET value = '0' WHERE key = 'feed_cursor'").run();
    expect(applyFeedPage(store.daemon.ctx, page)).toBeGreaterThan(0);
    expect({
      ledger: ledgerRows(sdb, acct.sandboxId),
      bank: row(sdb, 'bank_accounts', bank.body.id),
      intent: row(sdb, 'intents', paid.body.intent_id),
    }).toEqual(before);
    expect(await balanceOf(store.url, acct.testKey)).toBe(20_000 - 900 - 5000);
    expect(outboxMax(sdb)).toBe(outboxBefore);
  });

  it("the central's fee replaces the box's provisional one by an adjustment row every box learns", async () => {
    // The central charges 5%; the box still computes 4.5% (the default) while it is offline.
    const central = await startTestServer({ config: { role: 'central', money: { fee_percent: 5 } } });
    cleanup.push(() => central.stop());
    const acct = addStoreAccount(central);
    const store = await startStore(central.url, acct.key);
    cleanup.push(() => removeDir(store.dataDir));
    cleanup.push(() => store.stop());
    const sdb = store.daemon.ctx.db;
    const co = await http('POST', `${store.url}/api/checkouts`, acct.key, { items: [{ name: 'Card', amount_in_cents: 10_000 }], currency: 'GTQ' });
    const account = new AccountsService(sdb, store.daemon.ctx.clock).account(acct.accountId)!;
    const res = settleCheckoutPayment(store.daemon.ctx, account, { checkoutId: co.body.id, method: 'terminal', outcome: 'succeeded' });
    expect(row(sdb, 'balance_transactions', res.balanceTransactionId!)).toMatchObject({ fee_in_cents: -450 });

    const adj = await until(
      'the adjustment at the box',
      () => sdb.prepare("SELECT * FROM balance_transactions WHERE type = 'adjustment'").get() as Record<string, unknown> | undefined,
    );
    expect(adj).toMatchObject({ amount_in_cents: 0, fee_in_cents: -50, net_amount_in_cents: -50, source_id: res.paymentIntentId, account_id: acct.accountId });
    expect(ledgerRows(sdb, acct.accountId)).toEqual(ledgerRows(central.daemon.ctx.db, acct.accountId));
    expect(ledgerRows(sdb, acct.accountId)).toHaveLength(2); // the box's charge is not sent back to it
    expect(await balanceOf(store.url, acct.key)).toBe(10_000 - 500);
    expect(await balanceOf(central.url, acct.key)).toBe(10_000 - 500);
    expect(syncStatus(store.daemon.ctx.config, sdb).records_waiting).toBe(0);
  });
});

describe('accounts made at the central after the box joined', () => {
  it('a new connected child and its sandbox reach the box, and a key made for it then works there; new settings follow', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const sdb = store.daemon.ctx.db;
    const made = await http('POST', `${central.url}/api/connected_accounts`, acct.key, { email: 'branch@example.com', name: 'Branch' });
    expect(made.status).toBe(201);
    const childId = made.body.id as string;
    const accounts = new AccountsService(central.daemon.ctx.db, central.daemon.ctx.clock);
    const childKey = accounts.createKey({ accountId: childId, environment: 'live' }).key;
    const childTestKey = accounts.createKey({ accountId: childId, environment: 'test' }).key;

    await until('the key at the box', async () => (await http('GET', `${store.url}/api/account`, childKey)).status === 200);
    const atBox = await http('GET', `${store.url}/api/account`, childKey);
    expect(atBox.body).toEqual((await http('GET', `${central.url}/api/account`, childKey)).body);
    expect((await http('GET', `${store.url}/api/account`, childTestKey)).body).toEqual((await http('GET', `${central.url}/api/account`, childTestKey)).body);
    const local = new AccountsService(sdb, store.daemon.ctx.clock);
    expect(local.account(childId)).toMatchObject({ parent_account_id: acct.accountId, organization_id: central.installation.organization_id });
    expect((await http('GET', `${store.url}/api/connected_accounts/${childId}`, acct.key)).status).toBe(200);

    // Settings changed at the central reach the box's copy of the account.
    expect((await http('PATCH', `${central.url}/api/commission_invoicing_settings`, acct.key, { default_mode: 'daily' })).status).toBe(200);
    await until('the setting at the box', () => local.account(acct.accountId)?.settings.commission_invoicing_default_mode === 'daily');
    expect(local.account(acct.accountId)!.settings).toEqual(accounts.account(acct.accountId)!.settings);

    // A key revoked at the central stops working at the box (keys of new accounts included).
    accounts.revokeKey(accounts.keys().find((k) => k.account_id === childId && k.live_mode === 1)!.prefix);
    await until('the revocation at the box', async () => (await http('GET', `${store.url}/api/account`, childKey)).status === 401);
    expect(syncStatus(store.daemon.ctx.config, sdb).records_waiting).toBe(0);
  });
});
