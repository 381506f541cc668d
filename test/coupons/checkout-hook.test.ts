import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { AccountsService, type Account } from '../../src/accounts/service.js';
import { createCheckout, getCheckout, updateCheckout } from '../../src/modules/checkouts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { checkoutCoupons } from '../../src/modules/coupons/index.js';
import { ApiError } from '../../src/errors.js';

let s: TestServer;
let account: Account;
const clock = new ManualClock(Date.parse('2026-05-01T12:00:00.000Z'));

beforeAll(async () => {
  s = await startTestServer({ clock });
  account = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock).account(s.installation.sandbox_id)!;
  for (const body of [
    { name: 'MENOS20', amount_off_in_cents: 2000, max_redemptions: 1 },
    { name: 'AUTO5', percent_off: 5, automatically_applies: true, minimum_amount_in_cents: 20000 },
  ]) {
    expect((await s.api('POST', '/coupons', { body })).status).toBe(201);
  }
});
afterAll(() => s.stop());

describe('coupons in checkout creation and payment', () => {
  it('a checkout with a code is created for the discounted amount and redeems it when paid', async () => {
    const ctx = s.daemon.ctx;
    const ch = createCheckout(ctx, account, {
      items: [{ name: 'Corte', amount_in_cents: 10000, quantity: 1 }],
      currency: 'GTQ',
      coupon_codes: ['menos20'],
    });
    expect(ch.amount_in_cents).toBe(8000);
    expect(checkoutCoupons(ctx, ch.id).map((c) => c.amount_off_in_cents)).toEqual([2000]);

    // Growing the order past the automatic coupon's minimum prices it again with both.
    const grown = updateCheckout(ctx, account, ch.id, { items: [{ name: 'Corte', amount_in_cents: 10000, quantity: 2 }] });
    expect(grown.amount_in_cents).toBe(20000 - 2000 - 1000);
    expect(checkoutCoupons(ctx, ch.id)).toHaveLength(2);
    // In the order they were applied, whichever order their ids sort in: both orders are checked.
    const byPosition = () => ctx.db.prepare('SELECT coupon_id FROM checkout_coupons WHERE checkout_id = ? ORDER BY position').pluck().all(ch.id);
    const applied = byPosition();
    expect(checkoutCoupons(ctx, ch.id).map((c) => c.coupon_id)).toEqual(applied);
    ctx.db.prepare('UPDATE checkout_coupons SET position = 1 - position WHERE checkout_id = ?').run(ch.id);
    expect(checkoutCoupons(ctx, ch.id).map((c) => c.coupon_id)).toEqual([...applied].reverse());
    ctx.db.prepare('UPDATE checkout_coupons SET position = 1 - position WHERE checkout_id = ?').run(ch.id);

    expect((await s.api('GET', '/coupons?status=all')).body.find((c: any) => c.name === 'MENOS20').times_redeemed).toBe(0);
    settleCheckoutPayment(ctx, account, { checkoutId: ch.id, method: 'card', outcome: 'succeeded' });
    // A repeated settlement (terminal reconnect) counts once.
    settleCheckoutPayment(ctx, account, { checkoutId: ch.id, method: 'card', outcome: 'succeeded' });
    const list = (await s.api('GET', '/coupons?status=all')).body;
    expect(list.find((c: any) => c.name === 'MENOS20')).toMatchObject({ times_redeemed: 1, status: 'exhausted' });
    expect(list.find((c: any) => c.name === 'AUTO5').times_redeemed).toBe(1);
    expect(getCheckout(ctx, account, ch.id)!.status).toBe('paid');
  });

  it('a failed payment redeems nothing; an exhausted code refuses the checkout with 422', async () => {
    const ctx = s.daemon.ctx;
    const ch = createCheckout(ctx, account, { items: [{ name: 'x', amount_in_cents: 30000, quantity: 1 }], currency: 'GTQ' });
    expect(ch.amount_in_cents).toBe(28500);
    settleCheckoutPayment(ctx, account, { checkoutId: ch.id, method: 'card', outcome: 'failed' });
    const auto = (await s.api('GET', '/coupons?status=all')).body.find((c: any) => c.name === 'AUTO5');
    expect(auto.times_redeemed).toBe(1);
    let err: unknown;
    try {
      createCheckout(ctx, account, { items: [{ name: 'x', amount_in_cents: 10000, quantity: 1 }], currency: 'GTQ', coupon_codes: ['MENOS20'] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('coupon_not_applicable');
  });

  it('a discount that takes the charge below the minimum is refused', async () => {
    await s.api('POST', '/coupons', { body: { name: 'CASI', amount_off_in_cents: 900 } });
    expect(() =>
      createCheckout(s.daemon.ctx, account, { items: [{ name: 'x', amount_in_cents: 1000, quantity: 1 }], currency: 'GTQ', coupon_codes: ['CASI'] }),
    ).toThrow(ApiError);
  });
});

describe('coupons over HTTP', () => {
  it('POST /checkouts with coupon_codes charges the discounted amount; paying redeems; a bad code is 422', async () => {
    await s.api('POST', '/coupons', { body: { name: 'HTTP10', percent_off: 10 } });
    const ch = await s.api('POST', '/checkouts', { body: { items: [{ name: 'Tinte', amount_in_cents: 15000, quantity: 1 }], coupon_codes: ['http10'] } });
    expect(ch.status).toBe(201);
    expect(ch.body.amount_in_cents).toBe(13500);
    const paid = await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
    expect(paid.status).toBeLessThan(300);
    const c = (await s.api('GET', '/coupons')).body.find((x: any) => x.name === 'HTTP10');
    expect(c.times_redeemed).toBe(1);
    const bad = await s.api('POST', '/checkouts', { body: { items: [{ name: 'x', amount_in_cents: 15000, quantity: 1 }], coupon_codes: ['NADA'] } });
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ code: 'coupon_not_applicable', errors: { coupon_codes: ['NADA: no such coupon'] } });
  });
});
