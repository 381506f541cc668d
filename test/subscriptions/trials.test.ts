import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { subscriptionBiller } from '../../src/modules/subscriptions/index.js';

const DAY = 86_400_000;
const clock = new ManualClock(Date.parse('2026-03-01T12:00:00.000Z'));
let s: TestServer;
let trialPrice: string;
let plainPrice: string;
let customerId: string;

function events(): Array<[string, string]> {
  return (
    s.daemon.ctx.db.prepare("SELECT type, object_id FROM events WHERE type LIKE 'subscription.%' OR type LIKE 'setup_intent.%' ORDER BY seq").all() as any[]
  ).map((e) => [e.type, e.object_id]);
}
const payload = (type: string) => JSON.parse((s.daemon.ctx.db.prepare('SELECT payload FROM events WHERE type = ? ORDER BY seq DESC').get(type) as any).payload);
const runDue = () => subscriptionBiller(s.daemon.ctx).runDue();
const card = { network: 'visa', last4: '4242' };

beforeAll(async () => {
  s = await startTestServer({ clock });
  const product = await s.api('POST', '/products', {
    body: {
      product: {
        name: 'Clases de yoga',
        prices_attributes: [
          {
            amount_in_cents: 15000,
            currency: 'GTQ',
            charge_type: 'recurring',
            billing_interval: 'month',
            free_trial_interval: 'week',
            free_trial_interval_count: 2,
          },
          { amount_in_cents: 15000, currency: 'GTQ', charge_type: 'recurring', billing_interval: 'month' },
        ],
      },
    },
  });
  expect(product.status, JSON.stringify(product.body)).toBe(201);
  [trialPrice, plainPrice] = product.body.prices.map((p: any) => p.id);
  expect(product.body.prices[0]).toMatchObject({ free_trial_interval: 'week', free_trial_interval_count: 2 });
  expect(product.body.prices[1]).toMatchObject({ free_trial_interval: null, free_trial_interval_count: null });
  customerId = (await s.api('POST', '/customers', { body: { email: 'eva@example.com', name: 'Eva Ruiz' } })).body.id;
});
afterAll(() => s.stop());

describe('free trials (spec 6.4 price fields, 6.2 setup_intent.*)', () => {
  it('refuses trial fields on a one-time price, and a count without an interval, changing nothing', async () => {
    const before = (await s.api('GET', '/products')).headers['total-count'];
    const oneTime = await s.api('POST', '/products', {
      body: { product: { name: 'x', prices_attributes: [{ amount_in_cents: 1000, currency: 'GTQ', free_trial_interval: 'day' }] } },
    });
    expect(oneTime.status).toBe(400);
    expect(oneTime.body.errors).toHaveProperty(['prices_attributes.0.free_trial_interval']);
    const countOnly = await s.api('POST', '/products', {
      body: {
        product: {
          name: 'x',
          prices_attributes: [{ amount_in_cents: 1000, currency: 'GTQ', charge_type: 'recurring', billing_interval: 'month', free_trial_interval_count: 3 }],
        },
      },
    });
    expect(countOnly.status).toBe(400);
    expect((await s.api('GET', '/products')).headers['total-count']).toBe(before);
  });

  it('a price without a trial cannot start one (422); bad bodies are 400; nothing is created', async () => {
    const r = await s.api('POST', '/subscriptions', { body: { price_id: plainPrice, card } });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('price_has_no_trial');
    expect((await s.api('POST', '/subscriptions', { body: { price_id: trialPrice, card: { last4: '42' } } })).status).toBe(400);
    expect((await s.api('POST', '/subscriptions', { body: { price_id: 'price_nope', card } })).status).toBe(400);
    expect((await s.api('POST', '/subscriptions', { body: { price_id: trialPrice, customer_id: 'cus_nope', card } })).status).toBe(400);
    expect((await s.api('GET', '/subscriptions')).body).toEqual([]);
    expect(events()).toEqual([]);
  });

  it('starts in a trial with no charge (setup_intent.succeeded once); the first charge comes at trial end', async () => {
    const r = await s.api('POST', '/subscriptions', { body: { price_id: trialPrice, customer_id: customerId, card } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const trialEnd = '2026-03-15T12:00:00.000Z';
    expect(r.body).toMatchObject({
      status: 'active',
      trial_end: trialEnd,
      current_period_end: trialEnd,
      checkout_id: null,
      latest_checkout_id: null,
      setup_intent_id: expect.stringMatching(/^si_/),
      card,
    });
    expect(events()).toEqual([['setup_intent.succeeded', r.body.setup_intent_id]]);
    expect(payload('setup_intent.succeeded')).toMatchObject({
      event_type: 'setup_intent.succeeded',
      status: 'succeeded',
      subscription_id: r.body.id,
      customer_id: customerId,
      card,
    });
    const intents = () => (s.daemon.ctx.db.prepare("SELECT count(*) AS n FROM events WHERE type LIKE 'intent.%'").get() as any).n;
    expect(intents()).toBe(0);
    clock.set(Date.parse(trialEnd) - 1);
    expect(runDue()).toBe(0);
    clock.set(Date.parse(trialEnd));
    expect(runDue()).toBe(1);
    expect(runDue()).toBe(0);
    const after = (await s.api('GET', `/subscriptions/${r.body.id}`)).body;
    expect(after).toMatchObject({ status: 'active', trial_end: null, current_period_start: trialEnd, current_period_end: '2026-04-15T12:00:00.000Z' });
    expect((await s.api('GET', `/checkouts/${after.latest_checkout_id}`)).body).toMatchObject({ status: 'paid', amount_in_cents: 15000 });
    expect(intents()).toBeGreaterThan(0);
    expect(events()).toEqual([['setup_intent.succeeded', r.body.setup_intent_id]]);
    // Later failures are ordinary renewals: past_due, not a setup intent.
    const failed = await s.api('POST', `/test_helpers/subscriptions/${r.body.id}/advance`, { body: { outcome: 'failed' } });
    expect(failed.body.status).toBe('past_due');
    expect(events().slice(1)).toEqual([['subscription.past_due', r.body.id]]);
  });

  it('a failed first charge at trial end: unable_to_start, setup_intent.cancelled and subscription.cancel, once, no retries', async () => {
    const start = clock.now();
    const r = await s.api('POST', '/subscriptions', { body: { price_id: trialPrice, card: { last4: '0002' } } });
    expect(r.status).toBe(201);
    const before = events().length;
    // The sandbox card on file will decline; the helper charges now (as the biller would at trial end).
    const res = await s.api('POST', `/test_helpers/subscriptions/${r.body.id}/advance`, { body: { outcome: 'failed', failure_reason: 'insufficient_funds' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'unable_to_start',
      cancel_reason: 'trial_payment_failed',
      next_retry_at: null,
      next_payment_attempt_at: null,
      periods_paid: 0,
    });
    expect(events().slice(before)).toEqual([
      ['setup_intent.cancelled', r.body.setup_intent_id],
      ['subscription.cancel', r.body.id],
    ]);
    expect(payload('setup_intent.cancelled')).toMatchObject({
      status: 'cancelled',
      subscription_id: r.body.id,
      failure_reason: 'insufficient_funds',
      subscription: { id: r.body.id, status: 'unable_to_start' },
    });
    expect(payload('subscription.cancel')).toMatchObject({ reason: 'trial_payment_failed', subscription: { id: r.body.id, status: 'unable_to_start' } });
    clock.set(start + 30 * DAY);
    runDue();
    expect(events().slice(before)).toHaveLength(2);
    // It never started: nothing moves it (no reactivation, no pause, no changes); DELETE answers it as it is.
    for (const body of [{ status: 'active' }, { act: 'pause' }, { card }]) {
      const refused = await s.api('PATCH', `/subscriptions/${r.body.id}`, { body });
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(refused.body).toMatchObject({ code: 'subscription_transition_invalid', status: 'unable_to_start' });
    }
    const del = await s.api('DELETE', `/subscriptions/${r.body.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ message: 'Suscripción cancelada', status: 'unable_to_start' });
    expect((await s.api('GET', `/subscriptions?status=unable_to_start`)).body.map((x: any) => x.id)).toContain(r.body.id);
    expect(events().slice(before)).toHaveLength(2);
  });

  it('a trial whose end passes with a declining card is unable_to_start by the biller on the clock', async () => {
    const r = await s.api('POST', '/subscriptions', { body: { price_id: trialPrice, card } });
    // What the sandbox card on file answers (the advance helper's setting, without charging now).
    s.daemon.ctx.db.prepare("UPDATE subscriptions SET sandbox_outcome = 'failed' WHERE id = ?").run(r.body.id);
    const before = events().length;
    clock.set(Date.parse(r.body.trial_end));
    runDue();
    expect((await s.api('GET', `/subscriptions/${r.body.id}`)).body.status).toBe('unable_to_start');
    // A trial not yet due stays active: only its first charge decides.
    expect(r.body.status).toBe('active');
    const mine = events()
      .slice(before)
      .filter((e) => e[1] === r.body.id || e[1] === r.body.setup_intent_id);
    expect(mine).toEqual([
      ['setup_intent.cancelled', r.body.setup_intent_id],
      ['subscription.cancel', r.body.id],
    ]);
  });
});
