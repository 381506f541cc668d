import { afterEach, describe, expect, it } from 'vitest';
import { tx } from '../../src/db/database.js';
import { AccountsService } from '../../src/accounts/service.js';
import { postBalanceTransaction } from '../../src/modules/ledger/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { createProduct } from '../../src/modules/products/service.js';
import { syncStatus } from '../../src/sync/status.js';
import { CentralClient } from '../../src/sync/store/transport.js';
import { http, pairStoreAndCentral, removeDir, startStore, until, type TestStore } from './helpers.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

type Db = TestStore['daemon']['ctx']['db'];
const row = (db: Db, table: string, id: string) => db.prepare(`SELECT * FROM ${table} WHERE id = ?`).get(id) as Record<string, unknown> | undefined;
const count = (db: Db, sql: string, ...args: unknown[]) => (db.prepare(sql).get(...args) as { n: number }).n;
const feedCursor = (db: Db) => Number((db.prepare("SELECT value FROM sync_state WHERE key = 'feed_cursor'").get() as { value: string }).value);

describe('feed delivery', () => {
  it('a change pushed by box A reaches box B of the same account through the feed, and is not echoed to A', async () => {
    const { central, store: boxA, acct } = await pairStoreAndCentral(cleanup);
    const boxB = await startStore(central.url, acct.key);
    cleanup.push(() => removeDir(boxB.dataDir));
    cleanup.push(() => boxB.stop());
    const a = boxA.daemon.ctx.db;
    const b = boxB.daemon.ctx.db;

    const bank = await http('POST', `${boxA.url}/api/bank_accounts`, acct.key, {
      holder_name: 'Ana',
      number: '1234-5678',
      bank_name: 'Banrural',
      currency: 'GTQ',
      account_type: 'monetaria',
      is_preferred: true,
    });
    expect(bank.status).toBe(201);
    const co = await http('POST', `${boxA.url}/api/checkouts`, acct.key, { items: [{ name: 'Card', amount_in_cents: 10_000 }], currency: 'GTQ' });
    const account = new AccountsService(a, boxA.daemon.ctx.clock).account(acct.accountId)!;
    const paid = settleCheckoutPayment(boxA.daemon.ctx, account, { checkoutId: co.body.id, method: 'terminal', outcome: 'succeeded' });
    // A cash sale moves no balance: applied at the central, it publishes nothing (no feed row per sale).
    const sale = await http('POST', `${boxA.url}/api/cash_sales`, acct.key, { amount_in_cents: 3000, currency: 'GTQ' });
    expect(sale.status).toBe(201);

    await until('box B has them', () => row(b, 'bank_accounts', bank.body.id) && row(b, 'balance_transactions', paid.balanceTransactionId!));
    expect(row(b, 'bank_accounts', bank.body.id)).toEqual(row(a, 'bank_accounts', bank.body.id));
    // `origin` says where each box got the row: A made it, B learnt it from the central (reconciliation).
    const { balance_after_in_cents: _x, seq: _s1, origin: originAtB, ...txnAtB } = row(b, 'balance_transactions', paid.balanceTransactionId!)!;
    const { balance_after_in_cents: _y, seq: _s2, origin: originAtA, ...txnAtA } = row(a, 'balance_transactions', paid.balanceTransactionId!)!;
    expect(txnAtB).toEqual(txnAtA);
    expect([originAtA, originAtB]).toEqual([null, 'central']);
    expect((await http('GET', `${boxB.url}/api/balances`, acct.key)).body).toEqual((await http('GET', `${boxA.url}/api/balances`, acct.key)).body);
    // Box B applied them and pushed nothing back.
    expect(count(b, "SELECT count(*) AS n FROM sync_outbox WHERE kind <> 'event'")).toBe(0);

    // The central publishes them tagged with box A, and its feed leaves them out for A only.
    const client = new CentralClient(central.url, acct.key, { timeoutMs: 5000 });
    cleanup.push(() => client.close());
    const forA = await client.feed(0, 0, undefined, boxA.storeId);
    const forB = await client.feed(0, 0, undefined, boxB.storeId);
    const ids = (p: typeof forA) => p.changes.map((c) => c.object_id);
    expect(ids(forB)).toEqual(expect.arrayContaining([bank.body.id, paid.balanceTransactionId]));
    expect(ids(forA)).not.toContain(bank.body.id);
    expect(ids(forA)).not.toContain(paid.balanceTransactionId);
    await until('the cash sale at the central', () => count(central.daemon.ctx.db, "SELECT count(*) AS n FROM sync_received WHERE kind = 'cash_sale'") === 1);
    expect(count(central.daemon.ctx.db, 'SELECT count(*) AS n FROM sync_feed WHERE origin_store_id = ?', boxA.storeId)).toBe(2);
    // Box A holds its own rows once (its feed cursor moved past them without anything coming back).
    await until('box A pulled past them', () => feedCursor(a) >= forB.cursor);
    expect(count(a, 'SELECT count(*) AS n FROM balance_transactions')).toBe(1);
  });

  it('the cursor and the changes of a page commit together: a failure mid-page applies nothing, a restart then applies all once', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const cdb = central.daemon.ctx.db;
    // A real failure inside the box's database, on the second of three changes of one page.
    store.daemon.ctx.db.exec(`CREATE TRIGGER inject_failure BEFORE INSERT ON products WHEN NEW.name = 'Boom'
      BEGIN SELECT RAISE(ABORT, 'injected failure'); END`);
    const cursorBefore = feedCursor(store.daemon.ctx.db);
    const account = new AccountsService(cdb, central.daemon.ctx.clock).account(acct.accountId)!;
    const made = tx(cdb, () => {
      const txn = postBalanceTransaction(central.daemon.ctx, {
        accountId: account.id,
        liveMode: true,
        type: 'adjustment',
        amountInCents: 2500,
        feeInCents: 0,
        currency: 'GTQ',
        sourceId: 'ops_1',
        sourceType: 'adjustment',
      });
      const ids = ['Before', 'Boom', 'After'].map(
        (name) => createProduct(central.daemon.ctx, account, { name, prices_attributes: [{ amount_in_cents: 100, currency: 'GTQ' }] }).id,
      );
      return { txn: txn.id, ids };
    });

    await until('the page refused', () => syncStatus(store.daemon.ctx.config, store.daemon.ctx.db).last_error?.includes('injected failure'));
    const sdb = store.daemon.ctx.db;
    expect(row(sdb, 'balance_transactions', made.txn)).toBeUndefined();
    expect(row(sdb, 'products', made.ids[0])).toBeUndefined();
    expect(feedCursor(sdb)).toBe(cursorBefore);

    // Killed and restarted with the cause gone: everything once, in the same commit as the cursor.
    sdb.exec('DROP TRIGGER inject_failure');
    await store.stop();
    const again = await store.restart();
    cleanup.push(() => again.stop());
    const db = again.daemon.ctx.db;
    await until('the page applied', () => made.ids.every((id) => row(db, 'products', id)));
    expect(count(db, 'SELECT count(*) AS n FROM balance_transactions WHERE id = ?', made.txn)).toBe(1);
    expect(count(db, 'SELECT count(*) AS n FROM products')).toBe(3);
    expect(feedCursor(db)).toBeGreaterThan(cursorBefore);
    expect((await http('GET', `${again.url}/api/balances`, acct.key)).body).toEqual((await http('GET', `${central.url}/api/balances`, acct.key)).body);

    // Restarted once more: nothing is applied twice.
    const cursor = feedCursor(db);
    const lastPull = syncStatus(again.daemon.ctx.config, db).last_pull_at;
    await again.stop();
    const third = await again.restart();
    cleanup.push(() => third.stop());
    await until('a pull after the restart', () => syncStatus(third.daemon.ctx.config, third.daemon.ctx.db).last_pull_at !== lastPull);
    expect(feedCursor(third.daemon.ctx.db)).toBe(cursor);
    expect(count(third.daemon.ctx.db, 'SELECT count(*) AS n FROM balance_transactions')).toBe(1);
    expect(count(third.daemon.ctx.db, 'SELECT count(*) AS n FROM products')).toBe(3);
  });
});
