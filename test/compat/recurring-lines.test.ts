import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { subscriptionBiller } from '../../src/modules/subscriptions/index.js';

/**
 * Issue 14 part 4: an inline line with `charge_type: "recurring"` (what the official plugin sends for
 * a subscription order) starts a subscription when the checkout is paid, billed again on its
 * schedule. Real daemon over HTTP, an injected clock moves time, the biller runs its due work.
 */

const clock = new ManualClock(Date.parse('2026-03-10T15:00:00.000Z'));
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ clock });
});
afterAll(() => s.stop());

const runDue = () => subscriptionBiller(s.daemon.ctx).runDue();
const charges = (accountId: string) =>
  (
    s.daemon.ctx.db.prepare("SELECT amount_in_cents FROM balance_transactions WHERE account_id = ? AND type = 'charge' ORDER BY seq").all(accountId) as Array<{
      amount_in_cents: number;
    }>
  ).map((r) => r.amount_in_cents);

describe('inline recurring lines', () => {
  it("paying starts a subscription on the line's schedule, which bills again on its next period", async () => {
    const customer = await s.api('POST', '/customers', { body: { email: 'sub@example.com', full_name: 'Sofía', address: 'Zona 4' } });
    const order = {
      checkout: {
        customer_id: customer.body.id,
        metadata: { wc_order_id: '501' },
        items: [
          {
            name: 'Caja mensual',
            amount_in_cents: 15000,
            currency: 'GTQ',
            quantity: 1,
            charge_type: 'recurring',
            billing_interval: 'week',
            billing_interval_count: '2',
          },
          { name: 'Cuota de inscripción', amount_in_cents: 5000, currency: 'GTQ', quantity: 1, charge_type: 'one_time' },
        ],
      },
    };
    const ch = await s.api('POST', '/checkouts', { body: order });
    expect(ch.status, JSON.stringify(ch.body)).toBe(201);
    expect(ch.body.total_in_cents).toBe(20000);
    expect(ch.body.items[0]).toMatchObject({
      name: 'Caja mensual',
      amount_in_cents: 15000,
      product_id: expect.stringMatching(/^prod_/),
      price_id: expect.stringMatching(/^price_/),
    });
    expect(ch.body.items[1]).toMatchObject({ product_id: null, price_id: null });
    const price = await s.api('GET', `/products/${ch.body.items[0].product_id}`);
    expect(price.body.prices[0]).toMatchObject({ charge_type: 'recurring', billing_interval: 'week', billing_interval_count: 2, amount_in_cents: 15000 });

    const paid = await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
    expect(paid.status).toBe(200);
    const subs = (await s.api('GET', '/subscriptions?items=100')).body.filter((x: any) => x.checkout_id === ch.body.id);
    expect(subs).toHaveLength(1);
    const [sub] = subs;
    expect(sub).toMatchObject({
      status: 'active',
      customer_id: customer.body.id,
      amount_in_cents: 15000,
      current_period_start: '2026-03-10T15:00:00.000Z',
      current_period_end: '2026-03-24T15:00:00.000Z',
    });
    const sbx = s.installation.sandbox_id;
    expect(charges(sbx)).toEqual([20000]);

    // Nothing is due before the period ends; at its end the subscription bills 15000 once.
    clock.set(Date.parse('2026-03-24T14:59:00.000Z'));
    expect(runDue()).toBe(0);
    clock.set(Date.parse('2026-03-24T15:00:00.000Z'));
    expect(runDue()).toBe(1);
    expect(runDue()).toBe(0);
    const after = (await s.api('GET', `/subscriptions/${sub.id}`)).body;
    expect(after).toMatchObject({ status: 'active', current_period_start: '2026-03-24T15:00:00.000Z', current_period_end: '2026-04-07T15:00:00.000Z' });
    expect(charges(sbx)).toEqual([20000, 15000]);
  });

  it('refuses a trial count without its interval, a recurring line without an interval, and recurring fields on a one-time line', async () => {
    const line = { name: 'Plan', amount_in_cents: 5000, charge_type: 'recurring', billing_interval: 'month' };
    const trial = await s.api('POST', '/checkouts', { body: { items: [{ ...line, free_trial_interval_count: 7 }] } });
    expect(trial.status).toBe(400);
    expect(trial.body.errors).toHaveProperty(['items.0.free_trial_interval_count']);
    const noInterval = await s.api('POST', '/checkouts', { body: { items: [{ ...line, billing_interval: undefined }] } });
    expect(noInterval.status).toBe(400);
    expect(noInterval.body.errors).toHaveProperty(['items.0.billing_interval']);
    const oneTime = await s.api('POST', '/checkouts', { body: { items: [{ ...line, charge_type: 'one_time' }] } });
    expect(oneTime.status).toBe(400);
    expect(oneTime.body.errors).toHaveProperty(['items.0.charge_type']);
    // A refused checkout leaves no product behind.
    const products = (await s.api('GET', '/products?items=100')).body.filter((p: any) => p.name === 'Plan');
    expect(products).toEqual([]);
  });
});
