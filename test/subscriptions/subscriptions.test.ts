import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { subscriptionBiller } from '../../src/modules/subscriptions/index.js';

const DAY = 86_400_000;
const clock = new ManualClock(Date.parse('2026-01-31T15:00:00.000Z'));
let s: TestServer;
let priceId: string;
let customerId: string;

/** Every subscription.* and setup_intent.* event so far, oldest first, as [type, subscription id]. */
function subEvents(): Array<[string, string]> {
  return (
    s.daemon.ctx.db.prepare("SELECT type, object_id FROM events WHERE type LIKE 'subscription.%' OR type LIKE 'setup_intent.%' ORDER BY seq").all() as any[]
  ).map((e) => [e.type, e.object_id]);
}

async function subscribe(): Promise<any> {
  const ch = await s.api('POST', '/checkouts', { body: { items: [{ price_id: priceId, quantity: 1 }], customer_id: customerId } });
  expect(ch.status, JSON.stringify(ch.body)).toBe(201);
  const paid = await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
  expect(paid.status).toBe(200);
  const list = await s.api('GET', '/subscriptions?items=100');
  return list.body.find((x: any) => x.checkout_id === ch.body.id);
}

const runDue = () => subscriptionBiller(s.daemon.ctx).runDue();

beforeAll(async () => {
  s = await startTestServer({ clock });
  const product = await s.api('POST', '/products', {
    body: {
      product: {
        name: 'Membresía gimnasio',
        prices_attributes: [{ amount_in_cents: 25000, currency: 'GTQ', charge_type: 'recurring', billing_interval: 'month', billing_interval_count: 1 }],
      },
    },
  });
  expect(product.status, JSON.stringify(product.body)).toBe(201);
  priceId = product.body.prices[0].id;
  const customer = await s.api('POST', '/customers', { body: { email: 'ana@example.com', name: 'Ana López' } });
  customerId = customer.body.id;
});
afterAll(() => s.stop());

describe('subscriptions (spec 3.5) under a manual clock', () => {
  it('paying a checkout with a recurring item creates an active subscription and emits subscription.create once', async () => {
    const sub = await subscribe();
    expect(sub).toMatchObject({
      id: expect.stringMatching(/^su_/),
      status: 'active',
      customer_id: customerId,
      price_id: priceId,
      amount_in_cents: 25000,
      current_period_start: '2026-01-31T15:00:00.000Z',
      current_period_end: '2026-02-28T15:00:00.000Z',
      card: { network: 'visa', last4: '4242' },
    });
    expect(subEvents()).toEqual([['subscription.create', sub.id]]);
    const ev = s.daemon.ctx.db.prepare("SELECT payload FROM events WHERE type = 'subscription.create'").get() as any;
    expect(JSON.parse(ev.payload)).toMatchObject({
      event_type: 'subscription.create',
      id: sub.id,
      customer_id: customerId,
      customer_email: 'ana@example.com',
      customer_name: 'Ana López',
      payment: { id: expect.stringMatching(/^pa_/), paymentable: { type: 'Subscription' } },
      product: { name: 'Membresía gimnasio', prices: [{ id: priceId, billing_interval: 'month', charge_type: 'recurring' }] },
    });
    expect((await s.api('GET', `/subscriptions/${sub.id}`)).body).toEqual(sub);
  });

  it('renews when the period ends, once, with no subscription event', async () => {
    const [sub] = (await s.api('GET', '/subscriptions')).body;
    expect(runDue()).toBe(0);
    clock.set(Date.parse('2026-02-28T15:00:00.000Z'));
    expect(runDue()).toBe(1);
    expect(runDue()).toBe(0);
    const after = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect(after).toMatchObject({ status: 'active', current_period_start: '2026-02-28T15:00:00.000Z', current_period_end: '2026-03-28T15:00:00.000Z' });
    expect(after.latest_checkout_id).not.toBe(sub.checkout_id);
    const renewal = await s.api('GET', `/checkouts/${after.latest_checkout_id}`);
    expect(renewal.body).toMatchObject({ status: 'paid', amount_in_cents: 25000, metadata: { subscription_id: sub.id } });
    expect(subEvents()).toEqual([['subscription.create', sub.id]]);
  });

  it('first failure: past_due; retries 3 and 5 days later; canceled when both fail; each event once', async () => {
    const [sub] = (await s.api('GET', '/subscriptions')).body;
    const t0 = clock.now();
    const failed = await s.api('POST', `/test_helpers/subscriptions/${sub.id}/advance`, { body: { outcome: 'failed' } });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ status: 'past_due', failed_attempts: 1, next_retry_at: new Date(t0 + 3 * DAY).toISOString() });
    expect(runDue()).toBe(0);
    clock.set(t0 + 3 * DAY - 1);
    expect(runDue()).toBe(0);
    clock.set(t0 + 3 * DAY);
    expect(runDue()).toBe(1);
    expect((await s.api('GET', `/subscriptions/${sub.id}`)).body).toMatchObject({
      status: 'past_due',
      failed_attempts: 2,
      next_retry_at: new Date(t0 + 5 * DAY).toISOString(),
    });
    clock.set(t0 + 5 * DAY);
    expect(runDue()).toBe(1);
    expect(runDue()).toBe(0);
    const canceled = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect(canceled).toMatchObject({ status: 'cancelled', failed_attempts: 3, next_retry_at: null, cancel_reason: 'payment_failed' });
    expect(subEvents()).toEqual([
      ['subscription.create', sub.id],
      ['subscription.past_due', sub.id],
      ['subscription.cancel', sub.id],
    ]);
    // Three failed charges were real declined payments.
    const intents = s.daemon.ctx.db.prepare("SELECT count(*) AS n FROM events WHERE type = 'intent.failed'").get() as any;
    expect(intents.n).toBe(3);
  });

  it('reactivation within the allowed period: active again, subscription.reactivate once', async () => {
    const [sub] = (await s.api('GET', '/subscriptions')).body;
    clock.advance(10 * DAY);
    const r = await s.api('PATCH', `/subscriptions/${sub.id}`, { body: { status: 'active' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'active', failed_attempts: 0, canceled_at: null });
    expect(subEvents().slice(-1)).toEqual([['subscription.reactivate', sub.id]]);
    // Its period is over: the next charge is due now, and the card works again.
    await s.api('POST', `/test_helpers/subscriptions/${sub.id}/advance`, { body: { outcome: 'succeeded' } });
    expect((await s.api('GET', `/subscriptions/${sub.id}`)).body.status).toBe('active');
    expect(runDue()).toBe(0);
  });

  it('a retry that succeeds brings a past-due subscription back without a subscription event', async () => {
    const sub = await subscribe();
    const before = subEvents().length;
    await s.api('POST', `/test_helpers/subscriptions/${sub.id}/advance`, { body: { outcome: 'failed' } });
    const ok = await s.api('POST', `/test_helpers/subscriptions/${sub.id}/advance`, { body: { outcome: 'succeeded' } });
    expect(ok.body).toMatchObject({ status: 'active', failed_attempts: 0, next_retry_at: null });
    expect(subEvents().slice(before)).toEqual([['subscription.past_due', sub.id]]);
  });

  it('pause stops charges; resume restarts them; each event once; refused moves are 422', async () => {
    const sub = await subscribe();
    const before = subEvents().length;
    const paused = await s.api('PATCH', `/subscriptions/${sub.id}`, { body: { status: 'paused' } });
    expect(paused.body.status).toBe('paused');
    expect((await s.api('PATCH', `/subscriptions/${sub.id}`, { body: { status: 'paused' } })).body.code).toBe('subscription_transition_invalid');
    expect((await s.api('POST', `/test_helpers/subscriptions/${sub.id}/advance`, { body: {} })).status).toBe(422);
    clock.advance(60 * DAY);
    runDue(); // bills the others; the paused one is left alone
    expect((await s.api('GET', `/subscriptions/${sub.id}`)).body).toEqual(paused.body);
    const resumed = await s.api('PUT', `/subscriptions/${sub.id}`, { body: { status: 'active' } });
    expect(resumed.body.status).toBe('active');
    expect((await s.api('PATCH', `/subscriptions/${sub.id}`, { body: { status: 'active' } })).status).toBe(422);
    expect(runDue()).toBe(1);
    const billed = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect(billed.latest_checkout_id).not.toBe(paused.body.latest_checkout_id);
    expect(billed.status).toBe('active');
    expect(subEvents().slice(before)).toEqual([
      ['subscription.pause', sub.id],
      ['subscription.unpause', sub.id],
    ]);
  });

  it('DELETE cancels once; reactivation past the allowed period is refused', async () => {
    const sub = await subscribe();
    const before = subEvents().length;
    const del = await s.api('DELETE', `/subscriptions/${sub.id}`);
    // The hosted answer (`message`) beside the subscription, spelled as hosted (`cancelled`).
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ message: 'Suscripción cancelada', id: sub.id, status: 'cancelled', cancel_reason: 'requested' });
    const again = await s.api('DELETE', `/subscriptions/${sub.id}`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ message: 'Suscripción cancelada', status: 'cancelled' });
    expect(subEvents().slice(before)).toEqual([['subscription.cancel', sub.id]]);
    const cancelEvent = JSON.parse(
      (s.daemon.ctx.db.prepare("SELECT payload FROM events WHERE type = 'subscription.cancel' AND object_id = ?").get(sub.id) as any).payload,
    );
    expect(cancelEvent).toMatchObject({ event_type: 'subscription.cancel', reason: 'requested', subscription: { id: sub.id, status: 'cancelled' } });
    clock.advance(31 * DAY);
    const late = await s.api('PATCH', `/subscriptions/${sub.id}`, { body: { status: 'active' } });
    expect(late.status).toBe(422);
    expect(late.body.code).toBe('reactivation_period_over');
    expect(subEvents().slice(before)).toHaveLength(1);
  });

  it('lists with pages and filters; other environments see nothing; the helper is hidden from live keys', async () => {
    const all = await s.api('GET', '/subscriptions?items=2');
    expect(all.body).toHaveLength(2);
    expect(all.headers['total-count']).toBe('4');
    // The hosted spelling filters, and the spec's names the same state.
    const cancelled = await s.api('GET', '/subscriptions?status=cancelled');
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.length).toBeGreaterThan(0);
    expect(cancelled.body.every((x: any) => x.status === 'cancelled')).toBe(true);
    const canceled = await s.api('GET', '/subscriptions?status=canceled');
    expect(canceled.body.map((x: any) => x.id)).toEqual(cancelled.body.map((x: any) => x.id));
    const active = await s.api('GET', '/subscriptions?status=active');
    expect(active.body.every((x: any) => x.status === 'active')).toBe(true);
    expect(active.body.length + cancelled.body.length).toBeLessThanOrEqual(4);
    expect((await s.api('GET', '/subscriptions?status=gone')).status).toBe(400);
    const id = all.body[0].id;
    expect((await s.api('GET', `/subscriptions/${id}`, { key: s.installation.keys.live })).status).toBe(404);
    expect((await s.api('POST', `/test_helpers/subscriptions/${id}/advance`, { key: s.installation.keys.live, body: {} })).status).toBe(404);
    expect((await s.api('PATCH', `/subscriptions/${id}`, { body: { status: 'gone' } })).status).toBe(400);
  });
});
