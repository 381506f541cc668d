import { afterEach, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { advanceDispute, openDispute } from '../../src/modules/disputes/service.js';
import { syncStatus } from '../../src/sync/status.js';
import { http, pairStoreAndCentral, type TestStore, appliedAtCentral } from './helpers.js';

// Issue 15: the ledger `dispute` rows a store makes reach the central like every other ledger row
// (refund, transfer, payout): same ids, same amounts, once; the dispute row follows its status.

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const ledger = (db: TestStore['daemon']['ctx']['db']) =>
  db.prepare("SELECT id, amount_in_cents, fee_in_cents, source_id, created_at FROM balance_transactions WHERE type = 'dispute' ORDER BY created_at, id").all();
const dispute = (db: TestStore['daemon']['ctx']['db'], id: string) => db.prepare('SELECT * FROM disputes WHERE id = ?').get(id);
const synced = (store: TestStore) => appliedAtCentral(store);

describe('disputes made at the store', () => {
  it('exist at the central with the same id, status and ledger dispute rows; a won dispute nets to zero there too', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const ctx = store.daemon.ctx;
    const account = new AccountsService(ctx.db, ctx.clock).account(acct.accountId)!;
    const co = await http('POST', `${store.url}/api/checkouts`, acct.key, { items: [{ name: 'Disputed', amount_in_cents: 9000 }], currency: 'GTQ' });
    expect(co.status).toBe(201);
    const pa = settleCheckoutPayment(ctx, account, { checkoutId: co.body.id, method: 'terminal', outcome: 'succeeded' }).paymentIntentId;
    const scope = { accountIds: [account.id], liveMode: true };
    // The code a processor's notice runs (the sandbox helper calls the same).
    const opened = openDispute(ctx, scope, pa, { reason: 'fraudulent' });
    await synced(store);
    expect(dispute(central.daemon.ctx.db, opened.id)).toEqual(dispute(ctx.db, opened.id));
    expect(ledger(central.daemon.ctx.db)).toEqual(ledger(ctx.db));
    expect(ledger(ctx.db)).toHaveLength(1);

    advanceDispute(ctx, scope, opened.id, 'under_review');
    advanceDispute(ctx, scope, opened.id, 'won');
    await synced(store);
    expect(dispute(central.daemon.ctx.db, opened.id)).toEqual(dispute(ctx.db, opened.id));
    expect(ledger(ctx.db)).toHaveLength(2);
    expect(ledger(central.daemon.ctx.db)).toEqual(ledger(ctx.db));
    const sum = (db: TestStore['daemon']['ctx']['db']) => (db.prepare("SELECT sum(net_amount_in_cents) AS n FROM balance_transactions WHERE type = 'dispute'").get() as { n: number }).n;
    expect(sum(central.daemon.ctx.db)).toBe(0);
    expect(syncStatus(store.daemon.ctx.config, store.daemon.ctx.db).rejected_records).toBe(0);
  });
});
