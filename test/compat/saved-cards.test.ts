import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * One `pay_m_` id per saved card (issue 34; docs/compatibility.md "One id per saved card"): the id a
 * paid checkout answers as `payment_method.id` is the one `POST /one_time_payments` charges, the one
 * a subscription it started keeps, and never the payment intent's `pa_`.
 */

let s: TestServer;
let customerId: string;

beforeAll(async () => {
  s = await startTestServer();
  const c = await s.api('POST', '/customers', { body: { email: 'ana@example.com', full_name: 'Ana López' } });
  expect(c.status).toBe(201);
  customerId = c.body.id;
});
afterAll(() => s.stop());

const charges = () =>
  (
    s.daemon.ctx.db
      .prepare("SELECT amount_in_cents FROM balance_transactions WHERE account_id = ? AND type = 'charge' ORDER BY seq")
      .all(s.installation.sandbox_id) as Array<{ amount_in_cents: number }>
  ).map((r) => r.amount_in_cents);
const subscriptionOf = async (checkoutId: string) => {
  const list = (await s.api('GET', '/subscriptions?items=100')).body.filter((x: any) => x.checkout_id === checkoutId);
  expect(list).toHaveLength(1);
  return list[0];
};
async function pay(checkoutId: string) {
  const paid = await s.api('POST', `/test_helpers/checkouts/${checkoutId}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
  expect(paid.status, JSON.stringify(paid.body)).toBe(200);
}

describe('POST /one_time_payments with the id a checkout answered', () => {
  it('charges a card saved by a paid one-time checkout with the id the checkout answered (one pay_m_ id per saved card)', async () => {
    const ch = await s.api('POST', '/checkouts', { body: { customer_id: customerId, items: [{ name: 'Zapatos', amount_in_cents: 30000, currency: 'GTQ' }] } });
    await pay(ch.body.id);
    const checkout = (await s.api('GET', `/checkouts/${ch.body.id}`)).body;
    const pm = checkout.payment_method.id;
    // The card's id, not the payment intent's: pa_ stays the payment intent's own id.
    expect(pm).toMatch(/^pay_m_[0-9a-z]+$/);
    expect(checkout.payment_intent_id).toMatch(/^pa_/);
    const before = charges();

    const r = await s.api('POST', '/one_time_payments', { body: { payment_method_id: pm, items: [{ name: 'Calcetines', amount_in_cents: 4500 }] } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ object: 'one_time_payment', status: 'paid', amount_in_cents: 4500, customer_id: customerId, payment_method_id: pm });
    expect(charges()).toEqual([...before, 4500]);
    // The charge names the same card: on its checkout, and its unified intent says a saved card paid.
    const charged = (await s.api('GET', `/checkouts/${r.body.checkout_id}`)).body;
    expect(charged.payment_method).toEqual({ id: pm, type: 'card', card: { last4: '4242', network: 'visa' } });
    const pi = (await s.api('GET', `/payment_intents/${r.body.payment_intent_id}`)).body;
    expect((await s.api('GET', `/intents/${pi.intent_id}`)).body.details.used_presaved_payment_method).toBe(true);

    // A subscription started by a paid checkout keeps the card under the checkout's id.
    const rec = await s.api('POST', '/checkouts', {
      body: { customer_id: customerId, items: [{ name: 'Club 3', amount_in_cents: 7000, charge_type: 'recurring', billing_interval: 'month' }] },
    });
    await pay(rec.body.id);
    const sub = await subscriptionOf(rec.body.id);
    expect(sub.default_payment_method.id).toBe((await s.api('GET', `/checkouts/${rec.body.id}`)).body.payment_method.id);
    // A declined sandbox checkout saved no card; another account's or environment's key does not see this one.
    const declinedCh = await s.api('POST', '/checkouts', { body: { customer_id: customerId, items: [{ name: 'Gorra', amount_in_cents: 9000 }] } });
    const declined = await s.api('POST', `/test_helpers/checkouts/${declinedCh.body.id}/pay`, { body: { method: 'card', outcome: 'failed' } });
    expect(declined.status, JSON.stringify(declined.body)).toBe(200);
    const declinedPm = (await s.api('GET', `/checkouts/${declinedCh.body.id}`)).body.payment_method.id;
    expect(declinedPm).toMatch(/^pay_m_/);
    expect((await s.api('POST', '/one_time_payments', { body: { payment_method_id: declinedPm, items: [{ name: 'X', amount_in_cents: 1000 }] } })).status).toBe(
      400,
    );
    const live = await s.api('POST', '/one_time_payments', {
      key: s.installation.keys.live,
      body: { payment_method_id: pm, items: [{ name: 'X', amount_in_cents: 1000 }] },
    });
    expect(live.status).toBe(400);
    expect(live.body.errors).toHaveProperty('payment_method_id');
  });
});
