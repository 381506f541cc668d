import { afterEach, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { reviewTransfer } from '../../src/modules/transfers/service.js';
import { syncStatus } from '../../src/sync/status.js';
import { addStoreAccount, http, removeDir, startCentral, startStore, type TestStore, appliedAtCentral } from './helpers.js';

// Issue 15: a transfer held for review at a store, then released or cancelled there, reaches the
// central with its states and ledger rows (the reservation, the credit or the return), once.

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

type Db = TestStore['daemon']['ctx']['db'];
const ledger = (db: Db) =>
  db.prepare("SELECT id, account_id, amount_in_cents, source_id, created_at FROM balance_transactions WHERE type = 'transfer' ORDER BY id").all();
const transfers = (db: Db) => db.prepare('SELECT * FROM transfers ORDER BY id').all();
const synced = (store: TestStore) => appliedAtCentral(store);

describe('transfers held for review at a store', () => {
  it('exist at the central in review, then released or cancelled, with the same ledger rows', async () => {
    const central = await startCentral();
    cleanup.push(() => central.stop());
    const acct = addStoreAccount(central);
    const childId = new AccountsService(central.daemon.ctx.db, central.daemon.ctx.clock).createAccount({ name: 'Branch', parentId: acct.accountId }).account.id;
    const store = await startStore(central.url, acct.key, { config: { money: { transfer_review_above_in_cents: 1000 } } });
    cleanup.push(() => removeDir(store.dataDir));
    cleanup.push(() => store.stop());
    const ctx = store.daemon.ctx;
    const account = new AccountsService(ctx.db, ctx.clock).account(acct.accountId)!;
    const co = await http('POST', `${store.url}/api/checkouts`, acct.key, { items: [{ name: 'Funds', amount_in_cents: 50_000 }], currency: 'GTQ' });
    settleCheckoutPayment(ctx, account, { checkoutId: co.body.id, method: 'terminal', outcome: 'succeeded' });

    const a = await http('POST', `${store.url}/api/transfers`, acct.key, { recipient_id: childId, amount_in_cents: 7000, currency: 'GTQ' });
    const b = await http('POST', `${store.url}/api/transfers`, acct.key, { recipient_id: childId, amount_in_cents: 3000, currency: 'GTQ' });
    expect([a.body.status, b.body.status]).toEqual(['in_review', 'in_review']);
    await synced(store);
    expect(transfers(central.daemon.ctx.db)).toEqual(transfers(ctx.db));

    const scope = { accountIds: [acct.accountId], liveMode: true };
    reviewTransfer(ctx, scope, a.body.id, 'succeeded');
    reviewTransfer(ctx, scope, b.body.id, 'cancelled');
    await synced(store);
    expect(syncStatus(ctx.config, ctx.db).rejected_records).toBe(0);
    expect(transfers(central.daemon.ctx.db)).toEqual(transfers(ctx.db));
    expect(ledger(central.daemon.ctx.db)).toEqual(ledger(ctx.db));
    // Two reservations, one credit, one return.
    expect(ledger(ctx.db)).toHaveLength(4);
    const child = await http('GET', `${central.url}/api/transfers/${a.body.id}`, acct.key);
    expect(child.body.status).toBe('completed'); // answered as hosted (docs/compatibility.md)
  });
});
