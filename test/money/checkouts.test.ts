import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AccountsService } from '../../src/accounts/service.js';
import { count, paidCheckout, rows } from './helpers.js';

let s: TestServer;
let legacyChild: string;

beforeAll(async () => {
  s = await startTestServer();
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  legacyChild = accounts.createAccount({ name: 'Legacy child', parentId: s.installation.account_id, eventFormat: 'both' }).account.id;
});
afterAll(() => s.stop());

describe('products', () => {
  it('creates a product with prices and tax_category good by default, and updates it', async () => {
    const res = await s.api('POST', '/products', {
      body: { product: { name: 'Haircut', prices_attributes: [{ amount_in_cents: 7500, currency: 'GTQ' }] } },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'Haircut', tax_category: 'good', status: 'active', live_mode: false });
    expect(res.body.id).toMatch(/^prod_[0-9a-z]{16}$/);
    expect(res.body.prices[0]).toMatchObject({ amount_in_cents: 7500, currency: 'GTQ', charge_type: 'one_time' });
    expect(res.body.prices[0].id).toMatch(/^price_/);
    const patched = await s.api('PATCH', `/products/${res.body.id}`, { body: { product: { tax_category: 'service' } } });
    expect(patched.status).toBe(200);
    expect(patched.body.tax_category).toBe('service');
    const put = await s.api('PUT', `/products/${res.body.id}`, { body: { product: { name: 'Cut' } } });
    expect(put.body).toMatchObject({ name: 'Cut', tax_category: 'service' });
    const list = await s.api('GET', '/products');
    expect(list.body.map((p: any) => p.id)).toContain(res.body.id);
    // Another environment's id is 404.
    expect((await s.api('GET', `/products/${res.body.id}`, { key: s.installation.keys.live })).status).toBe(404);
  });

  it('rejects a product without prices or with a bad price, writing nothing', async () => {
    const before = count(s, 'products');
    for (const product of [
      { name: 'X', prices_attributes: [] },
      { name: 'X', prices_attributes: [{ amount_in_cents: '100.5', currency: 'GTQ' }] },
      { name: 'X', prices_attributes: [{ amount_in_cents: 100, currency: 'EUR' }] },
      { name: 'X', tax_category: 'food', prices_attributes: [{ amount_in_cents: 100, currency: 'GTQ' }] },
    ]) {
      const res = await s.api('POST', '/products', { body: { product } });
      expect(res.status).toBe(400);
      expect(res.body.errors).toBeTypeOf('object');
    }
    expect(count(s, 'products')).toBe(before);
  });
});

describe('checkouts', () => {
  it('prices inline and catalogue lines, keeping each line its classification', async () => {
    const prod = await s.api('POST', '/products', {
      body: { product: { name: 'Massage', tax_category: 'service', prices_attributes: [{ amount_in_cents: 20000, currency: 'GTQ' }] } },
    });
    const res = await s.api('POST', '/checkouts', {
      body: {
        items: [{ name: 'Oil', amount_in_cents: 1500, quantity: 2 }, { product_id: prod.body.id }, { price_id: prod.body.prices[0].id, quantity: 3 }],
        metadata: { table: 4 },
        expires_at: '2099-01-01T00:00:00-06:00',
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      status: 'unpaid',
      currency: 'GTQ',
      amount_in_cents: 1500 * 2 + 20000 + 20000 * 3,
      metadata: { table: 4 },
      expires_at: '2099-01-01T06:00:00.000Z',
      latest_intent: null,
    });
    expect(res.body.items.map((i: any) => i.tax_category)).toEqual(['good', 'service', 'service']);
    expect(res.body.url).toMatch(new RegExp(`/pay/${res.body.id}$`));
    const got = await s.api('GET', `/checkouts/${res.body.id}`);
    expect(got.body).toEqual(res.body);
  });

  it('answers 400 with errors for quantity, minimums, the line maximum and types, writing nothing', async () => {
    const before = count(s, 'checkouts');
    const cases: Array<[unknown, string]> = [
      [{ items: [{ amount_in_cents: 1000, quantity: 10 }] }, 'items.0.quantity'],
      [{ items: [{ amount_in_cents: 1000, quantity: 0 }] }, 'items.0.quantity'],
      [{ items: [{ amount_in_cents: 499, currency: 'GTQ' }] }, 'amount_in_cents'],
      [{ items: [{ amount_in_cents: 99, currency: 'USD' }] }, 'amount_in_cents'],
      [{ items: [{ amount_in_cents: 100_000_001 }] }, 'items.0.amount_in_cents'],
      [{ items: [{ amount_in_cents: -500 }] }, 'items.0.amount_in_cents'],
      [{ items: [{ amount_in_cents: 500.5 }] }, 'items.0.amount_in_cents'],
      [{ items: [{ amount_in_cents: '1000.0' }] }, 'items.0.amount_in_cents'],
      [{ items: [{ amount_in_cents: 1000, currency: 'EUR' }] }, 'items.0.currency'],
      [
        {
          items: [
            { amount_in_cents: 1000, currency: 'GTQ' },
            { amount_in_cents: 1000, currency: 'USD' },
          ],
        },
        'items.1.currency',
      ],
      [{ items: [{ product_id: 'prod_nope' }] }, 'items.0.product_id'],
      [{ items: [] }, 'items'],
      [{ items: [{ amount_in_cents: 1000 }], customer_id: 'cus_nope' }, 'customer_id'],
      [{ items: [{ amount_in_cents: 1000 }], expires_at: '2020-01-01T00:00:00Z' }, 'expires_at'],
    ];
    for (const [body, field] of cases) {
      const res = await s.api('POST', '/checkouts', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(res.body.errors), JSON.stringify(body)).toContain(field);
    }
    expect(count(s, 'checkouts')).toBe(before);
  });

  it('lets only an unpaid checkout change', async () => {
    const co = await s.api('POST', '/checkouts', { body: { items: [{ amount_in_cents: 1000 }] } });
    const patched = await s.api('PATCH', `/checkouts/${co.body.id}`, { body: { items: [{ amount_in_cents: 2000, quantity: 2 }], metadata: { a: 1 } } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ amount_in_cents: 4000, metadata: { a: 1 } });
    await s.api('POST', `/test_helpers/checkouts/${co.body.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
    for (const method of ['PATCH', 'PUT']) {
      const res = await s.api(method, `/checkouts/${co.body.id}`, { body: { metadata: { b: 2 } } });
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('checkout_not_modifiable');
    }
    expect((await s.api('GET', `/checkouts/${co.body.id}`)).body.metadata).toEqual({ a: 1 });
  });
});

describe('sandbox payments', () => {
  it('pays by card: checkout paid, payment intent, ledger charge with fee, intent.succeeded equal to GET /intents, sync record', async () => {
    const { checkout, pay } = await paidCheckout(s, 10_000);
    expect(pay).toMatchObject({ status: 'succeeded' });
    expect(pay.intent_id).toMatch(/^in_/);
    expect(pay.payment_intent_id).toMatch(/^pa_/);
    const co = await s.api('GET', `/checkouts/${checkout.id}`);
    expect(co.body).toMatchObject({ status: 'paid', latest_intent: { id: pay.intent_id }, payment_intent_id: pay.payment_intent_id });

    const txn = await s.api('GET', `/balance_transactions/${pay.balance_transaction_id}`);
    expect(txn.body).toMatchObject({
      type: 'charge',
      amount_in_cents: 10_000,
      fee_in_cents: -450,
      net_amount_in_cents: 9550,
      fee_details: { commission_in_cents: 402, vat_withheld_in_cents: 48 },
      source_id: pay.payment_intent_id,
    });

    const pa = await s.api('GET', `/payment_intents/${pay.payment_intent_id}`);
    expect(pa.body).toMatchObject({ status: 'succeeded', fee_in_cents: -450, card: { network: 'visa', last4: '4242' }, intent_id: pay.intent_id });

    const intent = await s.api('GET', `/intents/${pay.intent_id}`);
    expect(intent.status).toBe(200);
    expect(intent.body).toMatchObject({
      type: 'payment',
      event_type: 'intent.succeeded',
      status: 'succeeded',
      legacy_id: pay.payment_intent_id,
      amount_in_cents: 10_000,
      checkout: { id: checkout.id, status: 'paid' },
      details: { fee: 450, vat_withheld: 48, vat_withheld_currency: 'GTQ', failure_reason: null },
    });
    const [event] = rows(s, `SELECT * FROM events WHERE type = 'intent.succeeded' AND object_id = ?`, pay.intent_id);
    expect(JSON.parse(event.payload)).toEqual(intent.body);
    // A sandbox is on the unified format: no legacy event.
    expect(rows(s, `SELECT * FROM events WHERE object_id = ?`, pay.payment_intent_id)).toHaveLength(0);
    expect(rows(s, `SELECT kind FROM sync_outbox WHERE kind = 'checkout_payment'`).length).toBeGreaterThan(0);

    // Paying again returns the same result and emits nothing.
    const events = rows(s, 'SELECT id FROM events').length;
    const again = await s.api('POST', `/test_helpers/checkouts/${checkout.id}/pay`, { body: { method: 'card', outcome: 'failed' } });
    expect(again.body).toMatchObject({ status: 'succeeded', payment_intent_id: pay.payment_intent_id });
    expect(rows(s, 'SELECT id FROM events').length).toBe(events);
  });

  it('a failed bank transfer fails the checkout, moves no money and emits intent.failed', async () => {
    const ledger = count(s, 'balance_transactions');
    const co = await s.api('POST', '/checkouts', { body: { items: [{ amount_in_cents: 5000 }] } });
    const pay = await s.api('POST', `/test_helpers/checkouts/${co.body.id}/pay`, { body: { method: 'bank_transfer', outcome: 'failed' } });
    expect(pay.body).toMatchObject({ status: 'failed', balance_transaction_id: null });
    expect(count(s, 'balance_transactions')).toBe(ledger);
    const intent = await s.api('GET', `/intents/${pay.body.intent_id}`);
    expect(intent.body).toMatchObject({ type: 'bank_transfer', status: 'failed', details: { failure_reason: 'funds_not_received' } });
    expect(rows(s, `SELECT * FROM events WHERE type = 'intent.failed' AND object_id = ?`, pay.body.intent_id)).toHaveLength(1);
    expect((await s.api('GET', `/checkouts/${co.body.id}`)).body.status).toBe('failed');
  });

  it('is sandbox only: 404 with a live key', async () => {
    const co = await s.api('POST', '/checkouts', { key: s.installation.keys.live, body: { items: [{ amount_in_cents: 5000 }] } });
    const res = await s.api('POST', `/test_helpers/checkouts/${co.body.id}/pay`, {
      key: s.installation.keys.live,
      body: { method: 'card', outcome: 'succeeded' },
    });
    expect(res.status).toBe(404);
    expect((await s.api('GET', `/checkouts/${co.body.id}`, { key: s.installation.keys.live })).body.status).toBe('unpaid');
  });

  it('emits the legacy payment_intent.succeeded for a legacy-format account, beside intent.succeeded', async () => {
    const { settleCheckoutPayment } = await import('../../src/modules/payments/service.js');
    const { createCheckout } = await import('../../src/modules/checkouts/service.js');
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const child = accounts.account(legacyChild)!;
    const ctx = s.daemon.ctx;
    const co = createCheckout(ctx, child, { items: [{ name: 'Tea', amount_in_cents: 2000 }] });
    const r = settleCheckoutPayment(ctx, child, {
      checkoutId: co.id,
      method: 'terminal',
      outcome: 'succeeded',
      card: { network: 'mastercard', last4: '1111' },
    });
    const types = rows(s, 'SELECT type FROM events WHERE account_id = ? ORDER BY seq', legacyChild).map((e) => e.type);
    expect(types).toEqual(['intent.succeeded', 'payment_intent.succeeded']);
    const [legacy] = rows(s, `SELECT payload FROM events WHERE type = 'payment_intent.succeeded' AND account_id = ?`, legacyChild);
    const p = JSON.parse(legacy.payload);
    expect(p).toMatchObject({
      id: r.paymentIntentId,
      event_type: 'payment_intent.succeeded',
      amount_in_cents: 2000,
      fee: 90,
      checkout: { id: co.id, status: 'paid', payment_method: { card: { last4: '1111', network: 'mastercard' } } },
    });
    expect(rows(s, `SELECT kind FROM sync_outbox WHERE kind = 'terminal_payment' AND account_id = ?`, legacyChild)).toHaveLength(1);
  });
});

describe('payment intents and refunds', () => {
  it('PATCH sets tax_invoice_url on the payment intent and the intent document', async () => {
    const { pay } = await paidCheckout(s, 6000);
    const res = await s.api('PATCH', `/payment_intents/${pay.payment_intent_id}`, { body: { tax_invoice_url: 'https://dte.example/abc' } });
    expect(res.status).toBe(200);
    expect(res.body.tax_invoice_url).toBe('https://dte.example/abc');
    expect((await s.api('GET', `/intents/${pay.intent_id}`)).body.tax_invoice_url).toBe('https://dte.example/abc');
    const bad = await s.api('PATCH', `/payment_intents/${pay.payment_intent_id}`, { body: { tax_invoice_url: 42 } });
    expect(bad.status).toBe(400);
  });

  it('refunds the full amount once, returning the fee, with refund.create', async () => {
    const { pay } = await paidCheckout(s, 20_000);
    const before = await s.api('GET', '/balances');
    const gtq = (b: any) => b.body.find((x: any) => x.currency === 'GTQ').available_in_cents;
    const res = await s.api('POST', '/refunds', { body: { payment_intent_id: pay.payment_intent_id } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ amount_in_cents: 20_000, fee_returned_in_cents: 900, status: 'succeeded' });
    expect(res.body.id).toMatch(/^re_/);
    const txn = await s.api('GET', `/balance_transactions/${res.body.balance_transaction_id}`);
    expect(txn.body).toMatchObject({ type: 'refund', amount_in_cents: -20_000, fee_in_cents: 900, net_amount_in_cents: -19_100 });
    expect(gtq(await s.api('GET', '/balances'))).toBe(gtq(before) - 19_100);
    expect(rows(s, `SELECT * FROM events WHERE type = 'refund.create' AND object_id = ?`, res.body.id)).toHaveLength(1);
    expect((await s.api('GET', `/refunds/${res.body.id}`)).body).toEqual(res.body);

    const again = await s.api('POST', '/refunds', { body: { payment_intent_id: pay.payment_intent_id } });
    expect(again.status).toBe(422);
    expect(again.body).toMatchObject({ code: 'already_refunded', refund_id: res.body.id });
    expect(rows(s, 'SELECT * FROM refunds WHERE payment_intent_id = ?', pay.payment_intent_id)).toHaveLength(1);
  });

  it('refuses to refund a failed payment and answers 404 for unknown ones', async () => {
    const { pay } = await paidCheckout(s, 6000, { outcome: 'failed' });
    const res = await s.api('POST', '/refunds', { body: { payment_intent_id: pay.payment_intent_id } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('payment_not_succeeded');
    expect((await s.api('POST', '/refunds', { body: { payment_intent_id: 'pa_nope' } })).status).toBe(404);
    expect((await s.api('POST', '/refunds', { body: {} })).status).toBe(400);
  });

  it('gives one refund when the same Idempotency-Key is sent twice at once', async () => {
    const { pay } = await paidCheckout(s, 7000);
    const headers = { 'idempotency-key': `refund-${pay.payment_intent_id}` };
    const body = { payment_intent_id: pay.payment_intent_id };
    const answers = await Promise.all([s.api('POST', '/refunds', { body, headers }), s.api('POST', '/refunds', { body, headers })]);
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses[0]).toBe(201);
    expect([201, 409]).toContain(statuses[1]);
    expect(rows(s, 'SELECT * FROM refunds WHERE payment_intent_id = ?', pay.payment_intent_id)).toHaveLength(1);
    expect(
      rows(
        s,
        `SELECT * FROM balance_transactions WHERE type = 'refund' AND source_id IN (SELECT id FROM refunds WHERE payment_intent_id = ?)`,
        pay.payment_intent_id,
      ),
    ).toHaveLength(1);
  });
});
