import { afterEach, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { advanceDispute, openDispute } from '../../src/modules/disputes/service.js';
import { syncStatus } from '../../src/sync/status.js';
import { appliedAtCentral, http, pairStoreAndCentral, type TestStore, until } from './helpers.js';

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
    const sum = (db: TestStore['daemon']['ctx']['db']) =>
      (db.prepare("SELECT sum(net_amount_in_cents) AS n FROM balance_transactions WHERE type = 'dispute'").get() as { n: number }).n;
    expect(sum(central.daemon.ctx.db)).toBe(0);
    expect(syncStatus(store.daemon.ctx.config, store.daemon.ctx.db).rejected_records).toBe(0);
  });

  it('opened at the central reach the store as a dispute (feed), so a refund of that payment at the store is refused as disputed', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const ctx = store.daemon.ctx;
    const account = new AccountsService(ctx.db, ctx.clock).account(acct.accountId)!;
    const co = await http('POST', `${store.url}/api/checkouts`, acct.key, { items: [{ name: 'Charged back', amount_in_cents: 7000 }], currency: 'GTQ' });
    const pa = settleCheckoutPayment(ctx, account, { checkoutId: co.body.id, method: 'terminal', outcome: 'succeeded' }).paymentIntentId;
    await synced(store);
    // The card network's notice reaches the central (the processor talks to it, not to the store).
    const scope = { accountIds: [account.id], liveMode: true };
    const opened = openDispute(central.daemon.ctx, scope, pa, { reason: 'fraudulent' });
    await until('the dispute at the store', () => dispute(ctx.db, opened.id));
    expect(dispute(ctx.db, opened.id)).toEqual(dispute(central.daemon.ctx.db, opened.id));
    await until('its hold at the store', () => (ledger(ctx.db) as unknown[]).length === 1);
    expect(ledger(ctx.db)).toEqual(ledger(central.daemon.ctx.db));

    const refund = await http('POST', `${store.url}/api/refunds`, acct.key, { payment_intent_id: pa });
    expect(refund.status, JSON.stringify(refund.body)).toBe(422);
    expect(refund.body).toMatchObject({ code: 'payment_disputed', message: `The payment intent is disputed by ${opened.id} (needs_response).` });
    // The box emitted nothing for a change of the central's, and pushed nothing back.
    expect(ctx.db.prepare("SELECT count(*) AS n FROM events WHERE type LIKE 'dispute.%'").get()).toEqual({ n: 0 });
    expect(ctx.db.prepare("SELECT count(*) AS n FROM sync_outbox WHERE kind IN ('dispute', 'refund')").get()).toEqual({ n: 0 });

    // Its later steps follow: won at the central, won at the store, the hold returned there too.
    advanceDispute(central.daemon.ctx, scope, opened.id, 'won');
    await until('won at the store', () => (dispute(ctx.db, opened.id) as { status: string }).status === 'won');
    expect(dispute(ctx.db, opened.id)).toEqual(dispute(central.daemon.ctx.db, opened.id));
    await until('the return at the store', () => (ledger(ctx.db) as unknown[]).length === 2);
    expect(ledger(ctx.db)).toEqual(ledger(central.daemon.ctx.db));
    expect((await http('POST', `${store.url}/api/refunds`, acct.key, { payment_intent_id: pa })).body.code).toBe('payment_disputed');
  });
});
