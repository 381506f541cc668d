import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { subscriptionBiller } from '../../src/modules/subscriptions/index.js';

/**
 * Issue 14, subscriptions as the hosted service has them, over real HTTP against a real daemon with
 * an injected clock: free trials and an automatic end on inline recurring lines (the official
 * plugin's subscription orders), the price's period limits, `{act: pause|unpause}`, the hosted
 * subscription object, and `POST /one_time_payments` charging a saved card.
 */

const DAY = 86_400_000;
const T0 = Date.parse('2026-05-04T10:00:00.000Z');
const clock = new ManualClock(T0);
let s: TestServer;
let customerId: string;

beforeAll(async () => {
  s = await startTestServer({ clock });
  const c = await s.api('POST', '/customers', { body: { email: 'sofia@example.com', full_name: 'Sofía Pérez Luna', phone: '+50255550123', nit: '1234567-8' } });
  expect(c.status).toBe(201);
  customerId = c.body.id;
});
afterAll(() => s.stop());

const at = (days: number) => new Date(T0 + days * DAY).toISOString();
const runDue = () => subscriptionBiller(s.daemon.ctx).runDue();
const sbx = () => s.installation.sandbox_id;
const charges = () =>
  (
    s.daemon.ctx.db.prepare("SELECT amount_in_cents FROM balance_transactions WHERE account_id = ? AND type = 'charge' ORDER BY seq").all(sbx()) as Array<{
      amount_in_cents: number;
    }>
  ).map((r) => r.amount_in_cents);
const eventsOf = (objectIds: string[]) =>
  (
    s.daemon.ctx.db
      .prepare("SELECT type, object_id, payload FROM events WHERE type LIKE 'subscription.%' OR type LIKE 'setup_intent.%' ORDER BY seq")
      .all() as any[]
  )
    .filter((e) => objectIds.includes(e.object_id))
    .map((e) => ({ type: e.type as string, payload: JSON.parse(e.payload) }));
const subscriptionOf = async (checkoutId: string) => {
  const list = (await s.api('GET', '/subscriptions?items=100')).body.filter((x: any) => x.checkout_id === checkoutId);
  expect(list).toHaveLength(1);
  return list[0];
};
async function pay(checkoutId: string) {
  const paid = await s.api('POST', `/test_helpers/checkouts/${checkoutId}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
  expect(paid.status, JSON.stringify(paid.body)).toBe(200);
}

describe('inline recurring lines with a free trial and an automatic end', () => {
  it('charges nothing for the trial line, bills when the trial ends, and ends by itself after N paid periods', async () => {
    clock.set(T0);
    // What the official plugin sends for a weekly subscription with a 7-day trial and a sign-up fee.
    const ch = await s.api('POST', '/checkouts', {
      body: {
        checkout: {
          customer_id: customerId,
          metadata: { wc_order_id: '777' },
          items: [
            {
              name: 'Caja semanal',
              amount_in_cents: 15000,
              currency: 'GTQ',
              quantity: 1,
              charge_type: 'recurring',
              billing_interval: 'week',
              billing_interval_count: 1,
              free_trial_interval: 'day',
              free_trial_interval_count: '7',
              periods_before_automatic_cancellation: 2,
            },
            { name: 'Inscripción', amount_in_cents: 5000, currency: 'GTQ', quantity: 1, charge_type: 'one_time' },
          ],
        },
      },
    });
    expect(ch.status, JSON.stringify(ch.body)).toBe(201);
    // The trial line is not charged now: the checkout asks for the sign-up fee only.
    expect(ch.body.total_in_cents).toBe(5000);
    expect(ch.body.items[0]).toMatchObject({ amount_in_cents: 0, price_id: expect.stringMatching(/^price_/), payment_method_types: ['card'] });
    expect(ch.body.items[1].payment_method_types).toBeNull();
    const product = await s.api('GET', `/products/${ch.body.items[0].product_id}`);
    expect(product.body.prices[0]).toMatchObject({
      amount_in_cents: 15000,
      billing_interval: 'week',
      free_trial_interval: 'day',
      free_trial_interval_count: 7,
      periods_before_automatic_cancellation: 2,
      periods_before_allowed_to_cancel: null,
    });

    const before = charges();
    await pay(ch.body.id);
    expect(charges()).toEqual([...before, 5000]);
    const sub = await subscriptionOf(ch.body.id);
    expect(sub).toMatchObject({
      status: 'active',
      amount_in_cents: 15000,
      trial_end: at(7),
      current_period_start: at(0),
      current_period_end: at(7),
      setup_intent_id: expect.stringMatching(/^si_/),
      periods_paid: 0,
      periods_before_automatic_cancellation: 2,
      next_payment_attempt_at: at(7),
    });
    expect(eventsOf([sub.id, sub.setup_intent_id]).map((e) => e.type)).toEqual(['subscription.create', 'setup_intent.succeeded']);

    // The trial runs: nothing is due before it ends; then the first charge of 15000.
    clock.set(T0 + 7 * DAY - 60_000);
    expect(runDue()).toBe(0);
    clock.set(T0 + 7 * DAY);
    expect(runDue()).toBe(1);
    let now = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect(now).toMatchObject({ status: 'active', trial_end: null, periods_paid: 1, current_period_start: at(7), current_period_end: at(14) });
    // The second (last) paid period.
    clock.set(T0 + 14 * DAY);
    expect(runDue()).toBe(1);
    now = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect(now).toMatchObject({ status: 'active', periods_paid: 2, current_period_end: at(21), next_payment_attempt_at: null });
    expect(charges()).toEqual([...before, 5000, 15000, 15000]);

    // When the last paid period ends, it ends by itself: no third charge.
    clock.set(T0 + 21 * DAY);
    expect(runDue()).toBe(0);
    expect(charges()).toEqual([...before, 5000, 15000, 15000]);
    now = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect(now).toMatchObject({ status: 'cancelled', cancel_reason: 'automatic_cancellation', canceled_at: at(21), next_payment_attempt_at: null });
    const evs = eventsOf([sub.id]);
    expect(evs.map((e) => e.type)).toEqual(['subscription.create', 'subscription.cancel']);
    expect(evs[1].payload).toMatchObject({ reason: 'automatic_cancellation', failure_reason: null, subscription: { status: 'cancelled' } });
    clock.set(T0 + 40 * DAY);
    expect(runDue()).toBe(0);
    expect(eventsOf([sub.id])).toHaveLength(2);
  });

  it('a checkout of a trial line only is paid with 0: no money moves, the subscription starts its trial', async () => {
    clock.set(T0);
    const ch = await s.api('POST', '/checkouts', {
      body: {
        customer_id: customerId,
        items: [
          {
            name: 'Plan',
            amount_in_cents: 9900,
            charge_type: 'recurring',
            billing_interval: 'month',
            free_trial_interval: 'week',
            free_trial_interval_count: 1,
          },
        ],
      },
    });
    expect(ch.status, JSON.stringify(ch.body)).toBe(201);
    expect(ch.body.total_in_cents).toBe(0);
    const before = charges();
    await pay(ch.body.id);
    expect((await s.api('GET', `/checkouts/${ch.body.id}`)).body.status).toBe('paid');
    expect(charges()).toEqual(before);
    const sub = await subscriptionOf(ch.body.id);
    expect(sub).toMatchObject({ status: 'active', amount_in_cents: 9900, trial_end: at(7), current_period_end: at(7), periods_paid: 0 });
    // A zero trial count is "no trial" (the plugin's plain subscriptions): charged now, as before.
    const plain = await s.api('POST', '/checkouts', {
      body: {
        items: [
          {
            name: 'Plan',
            amount_in_cents: 9900,
            charge_type: 'recurring',
            billing_interval: 'month',
            free_trial_interval: 'day',
            free_trial_interval_count: 0,
          },
        ],
      },
    });
    expect(plain.body.total_in_cents).toBe(9900);
    // The hosted service's own "no trial" (`""`, 0) sent back, on a line and on a price.
    const empty = await s.api('POST', '/checkouts', {
      body: {
        items: [
          { name: 'Plan', amount_in_cents: 9900, charge_type: 'recurring', billing_interval: 'month', free_trial_interval: '', free_trial_interval_count: 0 },
        ],
      },
    });
    expect(empty.status, JSON.stringify(empty.body)).toBe(201);
    expect(empty.body.total_in_cents).toBe(9900);
    const price = await s.api('POST', '/products', {
      body: {
        product: {
          name: 'Sin prueba',
          prices_attributes: [
            {
              amount_in_cents: 9900,
              currency: 'GTQ',
              charge_type: 'recurring',
              billing_interval: 'month',
              free_trial_interval: '',
              free_trial_interval_count: 0,
            },
          ],
        },
      },
    });
    expect(price.status, JSON.stringify(price.body)).toBe(201);
    expect(price.body.prices[0]).toMatchObject({ free_trial_interval: null, free_trial_interval_count: null });
    // A trial keeps a card for its first charge: a trial line payable only by bank transfer is refused.
    const noCard = await s.api('POST', '/checkouts', {
      body: {
        items: [
          {
            name: 'Plan',
            amount_in_cents: 9900,
            charge_type: 'recurring',
            billing_interval: 'month',
            free_trial_interval: 'week',
            payment_method_types: ['bank_transfer'],
          },
        ],
      },
    });
    expect(noCard.status).toBe(400);
    expect(noCard.body.errors).toHaveProperty(['items.0.payment_method_types']);
    // A trial on a one-time line is not dropped: it is refused.
    const oneTime = await s.api('POST', '/checkouts', {
      body: { items: [{ name: 'Taza', amount_in_cents: 9900, charge_type: 'one_time', free_trial_interval: 'day' }] },
    });
    expect(oneTime.status).toBe(400);
    expect(oneTime.body.errors).toHaveProperty(['items.0.charge_type']);
  });
});

describe('price period limits', () => {
  it('stores and answers both fields, refuses them on a one-time price, and a minimum above the end', async () => {
    const bad = await s.api('POST', '/products', {
      body: { product: { name: 'x', prices_attributes: [{ amount_in_cents: 1000, currency: 'GTQ', periods_before_automatic_cancellation: 3 }] } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toHaveProperty(['prices_attributes.0.periods_before_automatic_cancellation']);
    const over = await s.api('POST', '/products', {
      body: {
        product: {
          name: 'x',
          prices_attributes: [
            {
              amount_in_cents: 1000,
              currency: 'GTQ',
              charge_type: 'recurring',
              billing_interval: 'month',
              periods_before_automatic_cancellation: 2,
              periods_before_allowed_to_cancel: 3,
            },
          ],
        },
      },
    });
    expect(over.status).toBe(400);
    expect(over.body.errors).toHaveProperty(['prices_attributes.0.periods_before_allowed_to_cancel']);
  });

  it('refuses proration_behavior, billing_cycle_anchor_day, defer_to_billing_day by name: posd bills from the start and never prorates', async () => {
    const before = (await s.api('GET', '/products?items=100')).headers['total-count'];
    for (const [field, value] of [
      ['proration_behavior', 'create_prorations'],
      ['billing_cycle_anchor_day', 15],
      ['defer_to_billing_day', true],
    ] as const) {
      const r = await s.api('POST', '/products', {
        body: {
          product: {
            name: 'x',
            prices_attributes: [{ amount_in_cents: 1000, currency: 'GTQ', charge_type: 'recurring', billing_interval: 'month', [field]: value }],
          },
        },
      });
      expect(r.status, field).toBe(400);
      expect(r.body.code, field).toBe('unknown_parameter');
      expect(r.body.errors, field).toHaveProperty([`prices_attributes.0.${field}`]);
    }
    expect((await s.api('GET', '/products?items=100')).headers['total-count']).toBe(before);
    // Answered as what posd does, as the hosted price object carries them.
    const made = await s.api('POST', '/products', {
      body: {
        product: { name: 'Mensual', prices_attributes: [{ amount_in_cents: 1000, currency: 'GTQ', charge_type: 'recurring', billing_interval: 'month' }] },
      },
    });
    expect(made.status).toBe(201);
    expect(made.body.prices[0]).toMatchObject({ proration_behavior: null, billing_cycle_anchor_day: null, defer_to_billing_day: false });
  });

  it('refuses a cancel before the minimum term with 422 subscription_minimum_term, allows it after', async () => {
    clock.set(T0);
    const product = await s.api('POST', '/products', {
      body: {
        product: {
          name: 'Gimnasio 3 meses mínimo',
          prices_attributes: [
            {
              amount_in_cents: 20000,
              currency: 'GTQ',
              charge_type: 'recurring',
              billing_interval: 'month',
              periods_before_allowed_to_cancel: '2',
              periods_before_automatic_cancellation: 12,
            },
          ],
        },
      },
    });
    expect(product.status, JSON.stringify(product.body)).toBe(201);
    expect(product.body.prices[0]).toMatchObject({ periods_before_allowed_to_cancel: 2, periods_before_automatic_cancellation: 12 });
    const ch = await s.api('POST', '/checkouts', { body: { customer_id: customerId, items: [{ price_id: product.body.prices[0].id }] } });
    expect(ch.body.total_in_cents).toBe(20000);
    await pay(ch.body.id);
    const sub = await subscriptionOf(ch.body.id);
    expect(sub).toMatchObject({ periods_paid: 1, periods_before_allowed_to_cancel: 2 });

    const refused = await s.api('DELETE', `/subscriptions/${sub.id}`);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ code: 'subscription_minimum_term', periods_paid: 1, periods_before_allowed_to_cancel: 2 });
    expect((await s.api('GET', `/subscriptions/${sub.id}`)).body.status).toBe('active');
    expect(eventsOf([sub.id]).map((e) => e.type)).toEqual(['subscription.create']);

    clock.set(Date.parse(sub.current_period_end));
    expect(runDue()).toBeGreaterThanOrEqual(1);
    const ok = await s.api('DELETE', `/subscriptions/${sub.id}`);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ message: 'Suscripción cancelada', status: 'cancelled', cancel_reason: 'requested', periods_paid: 2 });
  });
});

describe('PUT/PATCH /subscriptions/{id} {act}', () => {
  it('pauses and unpauses through the machine, wrapped or flat; billing stops while paused and resumes after', async () => {
    clock.set(T0);
    const ch = await s.api('POST', '/checkouts', {
      body: { customer_id: customerId, items: [{ name: 'Café', amount_in_cents: 8000, charge_type: 'recurring', billing_interval: 'week' }] },
    });
    await pay(ch.body.id);
    const sub = await subscriptionOf(ch.body.id);
    const before = charges();

    const paused = await s.api('PUT', `/subscriptions/${sub.id}`, { body: { subscription: { act: 'pause' } } });
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    expect(paused.body).toMatchObject({ status: 'paused', paused_at: at(0), next_payment_attempt_at: null });
    // Paused past its period end: nothing is billed.
    clock.set(T0 + 10 * DAY);
    runDue();
    expect(charges()).toEqual(before);
    expect((await s.api('PUT', `/subscriptions/${sub.id}`, { body: { act: 'pause' } })).status).toBe(422);

    const resumed = await s.api('PATCH', `/subscriptions/${sub.id}`, { body: { act: 'unpause' } });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body).toMatchObject({ status: 'active', paused_at: null, current_period_end: at(10) });
    expect(runDue()).toBeGreaterThanOrEqual(1);
    expect(charges()).toEqual([...before, 8000]);
    expect((await s.api('GET', `/subscriptions/${sub.id}`)).body).toMatchObject({ status: 'active', current_period_start: at(10), current_period_end: at(17) });
    expect(eventsOf([sub.id]).map((e) => e.type)).toEqual(['subscription.create', 'subscription.pause', 'subscription.unpause']);

    // unpause only resumes a paused one; other fields are refused by name; act and status are one move.
    expect((await s.api('PUT', `/subscriptions/${sub.id}`, { body: { act: 'unpause' } })).body.code).toBe('subscription_transition_invalid');
    const unknown = await s.api('PUT', `/subscriptions/${sub.id}`, { body: { subscription: { act: 'pause', resume_at: '2026-06-01' } } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('unknown_parameter');
    expect(JSON.stringify(unknown.body.errors)).toContain('resume_at');
    const both = await s.api('PUT', `/subscriptions/${sub.id}`, { body: { act: 'pause', status: 'paused' } });
    expect(both.status).toBe(400);
    expect(both.body.errors).toHaveProperty('act');
    const other = await s.api('PUT', `/subscriptions/${sub.id}`, { body: { act: 'stop' } });
    expect(other.status).toBe(400);
    expect((await s.api('GET', `/subscriptions/${sub.id}`)).body.status).toBe('active');
  });
});

describe('the hosted subscription object', () => {
  it('answers subscriber, checkout, product, tax fields, default_payment_method and the next charge', async () => {
    clock.set(T0);
    const ch = await s.api('POST', '/checkouts', {
      body: { customer_id: customerId, items: [{ name: 'Revista', amount_in_cents: 6000, charge_type: 'recurring', billing_interval: 'month' }] },
    });
    await pay(ch.body.id);
    const sub = await subscriptionOf(ch.body.id);
    const got = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect(got).toMatchObject({
      id: sub.id,
      description: 'Revista',
      status: 'active',
      tax_name: 'Sofía Pérez Luna',
      tax_id: '1234567-8',
      resumes_on: null,
      next_payment_attempt_at: got.current_period_end,
      payment_retries: 0,
      default_payment_method: { id: expect.stringMatching(/^pay_m_/), type: 'card', card: { last4: '4242', network: 'visa' } },
      subscriber: {
        id: customerId,
        first_name: 'Sofía',
        last_name: 'Pérez Luna',
        full_name: 'Sofía Pérez Luna',
        email: 'sofia@example.com',
        phone_number: '+50255550123',
      },
      checkout: { id: ch.body.id },
      product: { id: ch.body.items[0].product_id },
    });
    // A declined renewal: retries counted, the next attempt is the retry.
    const failed = await s.api('POST', `/test_helpers/subscriptions/${sub.id}/advance`, { body: { outcome: 'failed' } });
    expect(failed.body).toMatchObject({ status: 'past_due', payment_retries: 1, next_payment_attempt_at: failed.body.next_retry_at });
    expect(failed.body.next_retry_at).not.toBeNull();
  });
});

describe('POST /one_time_payments', () => {
  it('charges a saved card in a sandbox through the checkout payment code (intent, ledger, events)', async () => {
    clock.set(T0);
    const ch = await s.api('POST', '/checkouts', {
      body: { customer_id: customerId, items: [{ name: 'Club', amount_in_cents: 7000, charge_type: 'recurring', billing_interval: 'month' }] },
    });
    await pay(ch.body.id);
    const sub = await subscriptionOf(ch.body.id);
    const pm = sub.default_payment_method.id;
    const before = charges();
    const intentEvents = () => (s.daemon.ctx.db.prepare("SELECT count(*) AS n FROM events WHERE type = 'intent.succeeded'").get() as { n: number }).n;
    const intentsBefore = intentEvents();

    const r = await s.api('POST', '/one_time_payments', {
      body: { one_time_payment: { payment_method_id: pm, items: [{ name: 'Toalla', amount_in_cents: 2500, currency: 'GTQ', quantity: 2 }] } },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({
      id: expect.stringMatching(/^on_/),
      status: 'paid',
      amount_in_cents: 5000,
      currency: 'GTQ',
      customer_id: customerId,
      payment_method_id: pm,
    });
    expect(charges()).toEqual([...before, 5000]);
    expect(intentEvents()).toBe(intentsBefore + 1);
    const pi = await s.api('GET', `/payment_intents/${r.body.payment_intent_id}`);
    expect(pi.status).toBe(200);
    expect(JSON.stringify(pi.body)).toContain('"4242"');
    const checkout = (await s.api('GET', `/checkouts/${r.body.checkout_id}`)).body;
    expect(checkout).toMatchObject({ status: 'paid', customer_id: customerId, metadata: { payment_method_id: pm } });
    // Flat body too; no subscription comes of a one-time payment.
    const flat = await s.api('POST', '/one_time_payments', { body: { payment_method_id: pm, items: [{ name: 'Agua', amount_in_cents: 1000 }] } });
    expect(flat.status).toBe(201);
    expect((await s.api('GET', '/subscriptions?items=100')).body.filter((x: any) => x.checkout_id === flat.body.checkout_id)).toEqual([]);
  });

  it('refuses an unknown card, recurring lines and unknown fields; a declined card records the failure and answers 402', async () => {
    const ch = await s.api('POST', '/checkouts', {
      body: { customer_id: customerId, items: [{ name: 'Club 2', amount_in_cents: 7000, charge_type: 'recurring', billing_interval: 'month' }] },
    });
    await pay(ch.body.id);
    const sub = await subscriptionOf(ch.body.id);
    const pm = sub.default_payment_method.id;
    const line = { name: 'Toalla', amount_in_cents: 2500 };

    const unknownPm = await s.api('POST', '/one_time_payments', { body: { payment_method_id: 'pay_m_nope', items: [line] } });
    expect(unknownPm.status).toBe(400);
    expect(unknownPm.body.errors).toHaveProperty('payment_method_id');
    const recurring = await s.api('POST', '/one_time_payments', {
      body: { payment_method_id: pm, items: [{ ...line, charge_type: 'recurring', billing_interval: 'month' }] },
    });
    expect(recurring.status).toBe(400);
    expect(recurring.body.errors).toHaveProperty(['items.0.charge_type']);
    const extra = await s.api('POST', '/one_time_payments', { body: { payment_method_id: pm, items: [line], cvv: '123' } });
    expect(extra.status).toBe(400);
    expect(extra.body.code).toBe('unknown_parameter');

    // The sandbox card on file now declines (the advance helper sets it).
    await s.api('POST', `/test_helpers/subscriptions/${sub.id}/advance`, { body: { outcome: 'failed' } });
    const before = charges();
    const declined = await s.api('POST', '/one_time_payments', { body: { payment_method_id: pm, items: [line] } });
    expect(declined.status).toBe(402);
    expect(declined.body).toMatchObject({ code: 'card_declined', payment_intent_id: expect.stringMatching(/^pa_/) });
    expect(charges()).toEqual(before);
    const pi = await s.api('GET', `/payment_intents/${declined.body.payment_intent_id}`);
    expect(pi.body).toMatchObject({ failure_reason: 'card_declined' });
  });

  it('in live mode answers 422 card_not_present_unavailable: the box has no acquirer', async () => {
    const live = s.installation.keys.live;
    const product = await s.api('POST', '/products', {
      key: live,
      body: {
        name: 'Plan live',
        prices_attributes: [{ amount_in_cents: 15000, currency: 'GTQ', charge_type: 'recurring', billing_interval: 'month', free_trial_interval: 'week' }],
      },
    });
    expect(product.status, JSON.stringify(product.body)).toBe(201);
    const sub = await s.api('POST', '/subscriptions', { key: live, body: { price_id: product.body.prices[0].id, card: { network: 'visa', last4: '1111' } } });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const pm = sub.body.default_payment_method.id;
    const r = await s.api('POST', '/one_time_payments', { key: live, body: { payment_method_id: pm, items: [{ name: 'Extra', amount_in_cents: 2500 }] } });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('card_not_present_unavailable');
    // A sandbox key does not see the live card.
    const cross = await s.api('POST', '/one_time_payments', { body: { payment_method_id: pm, items: [{ name: 'Extra', amount_in_cents: 2500 }] } });
    expect(cross.status).toBe(400);
  });
});
