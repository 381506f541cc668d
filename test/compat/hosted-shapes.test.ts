import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Response shapes and routes of the hosted reference (shared/spec/hosted-api.md sections 3.2, 5, 8,
 * 12, 13) over real HTTP against a real daemon: webhook endpoints' metadata and camelCase times, the
 * `user_id` filters, `DELETE /coupons/{id}`, refunds' and checkouts' hosted objects.
 */

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const line = { name: 'Camisa', amount_in_cents: 10000, currency: 'GTQ', quantity: 1 };
const pay = (id: string) => s.api('POST', `/test_helpers/checkouts/${id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });

describe('webhook endpoints (hosted section 13)', () => {
  it('keep metadata on create, list, get and update, and answer createdAt/updatedAt', async () => {
    const made = await s.api('POST', '/webhook_endpoints', {
      body: { url: 'https://shop.example/hooks', description: 'tienda', metadata: { store: 'zona10' } },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({ metadata: { store: 'zona10' }, createdAt: made.body.created_at, updatedAt: made.body.updated_at, disabled: false });
    expect(made.body.signingSecret).toBeTruthy();
    expect((await s.api('GET', `/webhook_endpoints/${made.body.id}`)).body).toMatchObject({ metadata: { store: 'zona10' } });
    const listed = (await s.api('GET', '/webhook_endpoints')).body.find((e: { id: string }) => e.id === made.body.id);
    expect(listed).toMatchObject({ metadata: { store: 'zona10' }, createdAt: expect.any(String), updatedAt: expect.any(String) });
    const changed = await s.api('PATCH', `/webhook_endpoints/${made.body.id}`, { body: { metadata: { store: 'zona1', till: '2' } } });
    expect(changed.body.metadata).toEqual({ store: 'zona1', till: '2' });
    expect((await s.api('POST', '/webhook_endpoints', { body: { url: 'https://shop.example/h2', metadata: { n: 1 } } })).status).toBe(400);
    const plain = await s.api('POST', '/webhook_endpoints', { body: { url: 'https://shop.example/h3' } });
    expect(plain.body.metadata).toEqual({});
  });
});

describe('user_id filters (hosted sections 3 and 5)', () => {
  it("GET /customers?user_id= and GET /checkouts?user_id= answer that user's customer and its checkouts", async () => {
    const user = await s.api('POST', '/users', { body: { email: 'lucia@example.com', full_name: 'Lucía' } });
    const other = await s.api('POST', '/customers', { body: { email: 'otro@example.com' } });
    const mine = await s.api('POST', '/checkouts', { body: { items: [line], user_id: user.body.id } });
    expect(mine.status).toBe(201);
    const theirs = await s.api('POST', '/checkouts', { body: { items: [line], customer_id: other.body.id } });

    const customers = await s.api('GET', `/customers?user_id=${user.body.id}`);
    expect(customers.status).toBe(200);
    expect(customers.body.customers.map((c: { id: string; user_id: string }) => [c.id, c.user_id])).toEqual([[mine.body.customer_id, user.body.id]]);
    const checkouts = await s.api('GET', `/checkouts.json?user_id=${user.body.id}&items=100`);
    expect(checkouts.body.map((c: { id: string }) => c.id)).toEqual([mine.body.id]);
    expect(checkouts.body.map((c: { id: string }) => c.id)).not.toContain(theirs.body.id);
    expect((await s.api('GET', '/customers?user_id=us_unknown000000')).body.customers).toEqual([]);
    expect((await s.api('GET', '/checkouts?user_id=us_unknown000000')).body).toEqual([]);
  });
});

describe('DELETE /coupons/{id}', () => {
  it('archives the coupon, answers it, and it no longer applies', async () => {
    const c = await s.api('POST', '/coupons', { body: { name: 'BORRAR10', percent_off: 10 } });
    const del = await s.api('DELETE', `/coupons/${c.body.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ id: c.body.id, status: 'archived' });
    expect((await s.api('GET', '/coupons')).body.map((x: { id: string }) => x.id)).not.toContain(c.body.id);
    const typed = await s.api('POST', '/checkouts', { body: { items: [line], coupon_codes: ['BORRAR10'] } });
    expect(typed.status).toBe(422);
    expect((await s.api('DELETE', '/coupons/coup_nope00000000')).status).toBe(404);
  });
});

describe('checkouts and refunds answer the hosted objects (hosted sections 3.2 and 8)', () => {
  it('payment and payment_method are null until paid, then name the payment, the payer and the card; discount names its coupon', async () => {
    const customer = await s.api('POST', '/customers', {
      body: { email: 'marta@example.com', full_name: 'Marta Ruiz', nit: '123456-7', phone: '+502 5555 0000', address: 'Zona 4' },
    });
    const coupon = await s.api('POST', '/coupons', { body: { name: 'MENOS5', amount_off_in_cents: 500 } });
    const ch = await s.api('POST', '/checkouts', { body: { items: [line], customer_id: customer.body.id, coupon_codes: ['MENOS5'] } });
    expect(ch.status, JSON.stringify(ch.body)).toBe(201);
    expect(ch.body).toMatchObject({
      payment: null,
      payment_method: null,
      custom_fields: [],
      discount: { amount_in_cents: 500, coupon: { id: coupon.body.id, name: 'MENOS5' } },
    });

    const paid = await pay(ch.body.id);
    const got = (await s.api('GET', `/checkouts/${ch.body.id}`)).body;
    expect(got.payment).toEqual({
      id: expect.stringMatching(/^on_/),
      paymentable: {
        type: 'OneTimePayment',
        id: got.payment.id,
        tax_name: 'Marta Ruiz',
        tax_id: '123456-7',
        address: 'Zona 4',
        phone_number: '+502 5555 0000',
      },
    });
    // The card's own id (pay_m_), not the payment intent's (issue 34).
    expect(got.payment_method).toEqual({
      id: expect.stringMatching(/^pay_m_/),
      type: 'card',
      card: { last4: expect.stringMatching(/^\d{4}$/), network: expect.any(String) },
    });
    expect(got.payment_intent_id).toBe(paid.body.payment_intent_id);
    const intent = (await s.api('GET', `/intents/${paid.body.intent_id}`)).body;
    // The same payment id the unified payload names.
    expect(intent.payment.id).toBe(got.payment.id);

    const refund = await s.api('POST', '/refunds', { body: { payment_intent_id: paid.body.payment_intent_id } });
    expect(refund.status).toBe(201);
    expect(refund.body).toMatchObject({
      status: 'succeeded',
      customer: { id: customer.body.id, email: 'marta@example.com', full_name: 'Marta Ruiz' },
      user_id: null,
      customer_refunded_amount_in_cents: 9500,
      account_refunded_amount_in_cents: 9500 - refund.body.fee_returned_in_cents,
    });
    expect(refund.body.fee_returned_in_cents).toBeGreaterThan(0);
    expect((await s.api('GET', `/refunds/${refund.body.id}`)).body).toEqual(refund.body);
  });

  it('a refund of a checkout paid by a user names the user', async () => {
    const user = await s.api('POST', '/users', { body: { email: 'pedro@example.com' } });
    const ch = await s.api('POST', '/checkouts', { body: { items: [line], user_id: user.body.id } });
    const paid = await pay(ch.body.id);
    const refund = await s.api('POST', '/refunds', { body: { payment_intent_id: paid.body.payment_intent_id } });
    expect(refund.body).toMatchObject({ user_id: user.body.id, customer: { id: ch.body.customer_id, email: 'pedro@example.com' } });
  });
});
