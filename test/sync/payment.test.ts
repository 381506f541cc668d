import { afterEach, describe, expect, it } from 'vitest';
import { AccountsService } from '../../src/accounts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { applyStorePayment } from '../../src/modules/payments/sync.js';
import { tx } from '../../src/db/database.js';
import { http, pairStoreAndCentral, appliedAtCentral } from './helpers.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('checkout payments settled at the store', () => {
  it('exist at the central once, with the same ids, the same ledger charge row and fee, and their events under the same ids', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const account = new AccountsService(store.daemon.ctx.db, store.daemon.ctx.clock).account(acct.accountId)!;
    const settled = [];
    for (const [i, method, outcome] of [
      [0, 'terminal', 'succeeded'],
      [1, 'card', 'succeeded'],
      [2, 'terminal', 'failed'],
    ] as const) {
      const co = await http('POST', `${store.url}/api/checkouts`, acct.key, { items: [{ name: `Line ${i}`, amount_in_cents: 10_000 + i }], currency: 'GTQ' });
      expect(co.status).toBe(201);
      const r = settleCheckoutPayment(store.daemon.ctx, account, {
        checkoutId: co.body.id,
        method,
        outcome,
        failureReason: outcome === 'failed' ? 'card_declined' : null,
        card: { network: 'visa', last4: '4242' },
      });
      settled.push({ ...r, checkoutId: co.body.id });
    }
    await appliedAtCentral(store);

    for (const s of settled) {
      for (const path of [`/api/intents/${s.intentId}`, `/api/payment_intents/${s.paymentIntentId}`, `/api/checkouts/${s.checkoutId}`]) {
        const atStore = await http('GET', `${store.url}${path}`, acct.key);
        const atCentral = await http('GET', `${central.url}${path}`, acct.key);
        expect(atCentral.status, path).toBe(200);
        // The central numbers receipts and builds URLs itself; everything else is the store's.
        const strip = (b: Record<string, unknown>) => {
          const { receipt_number: _r, url: _u, ...rest } = b;
          return rest;
        };
        expect(strip(atCentral.body), path).toEqual(strip(atStore.body));
      }
    }
    const charges = (db: typeof store.daemon.ctx.db) =>
      db
        .prepare(
          "SELECT id, type, amount_in_cents, fee_in_cents, net_amount_in_cents, commission_in_cents, vat_withheld_in_cents, source_id, created_at FROM balance_transactions WHERE type = 'charge' ORDER BY id",
        )
        .all();
    const storeCharges = charges(store.daemon.ctx.db);
    expect(storeCharges).toHaveLength(2);
    expect((storeCharges[0] as { fee_in_cents: number }).fee_in_cents).toBeLessThan(0);
    expect(charges(central.daemon.ctx.db)).toEqual(storeCharges);
    const bt = await http('GET', `${central.url}/api/balance_transactions/${settled[0].balanceTransactionId}`, acct.key);
    expect(bt.status).toBe(200);
    expect(bt.body.source_id).toBe(settled[0].paymentIntentId);

    const q = "SELECT id, type FROM events WHERE type LIKE 'intent.%' ORDER BY id";
    const storeEvents = store.daemon.ctx.db.prepare(q).all();
    expect(storeEvents).toHaveLength(3);
    expect(central.daemon.ctx.db.prepare(q).all()).toEqual(storeEvents);
  });

  it('write no second ledger row, payment intent or intent when the same payment reaches the applier again', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const account = new AccountsService(store.daemon.ctx.db, store.daemon.ctx.clock).account(acct.accountId)!;
    const co = await http('POST', `${store.url}/api/checkouts`, acct.key, { items: [{ name: 'Once', amount_in_cents: 2500 }], currency: 'GTQ' });
    const r = settleCheckoutPayment(store.daemon.ctx, account, { checkoutId: co.body.id, method: 'terminal', outcome: 'succeeded' });
    await appliedAtCentral(store);
    // The engine calls an applier once per record id; the applier must still write nothing twice when
    // the same payment reaches it again (say, under another record id after a restore).
    const rec = store.daemon.ctx.db.prepare("SELECT payload FROM sync_outbox WHERE kind = 'terminal_payment'").get() as { payload: string };
    const centralAccount = new AccountsService(central.daemon.ctx.db, central.daemon.ctx.clock).account(acct.accountId)!;
    tx(central.daemon.ctx.db, () => applyStorePayment(central.daemon.ctx, centralAccount, JSON.parse(rec.payload)));
    const n = (sql: string) => (central.daemon.ctx.db.prepare(sql).get(r.paymentIntentId) as { n: number }).n;
    expect(n('SELECT count(*) AS n FROM balance_transactions WHERE source_id = ?')).toBe(1);
    expect(n('SELECT count(*) AS n FROM payment_intents WHERE id = ?')).toBe(1);
    expect(n('SELECT count(*) AS n FROM intents WHERE legacy_id = ?')).toBe(1);
  });
});
