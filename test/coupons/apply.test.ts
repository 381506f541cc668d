import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { tx } from '../../src/db/database.js';
import { AccountsService, type Account } from '../../src/accounts/service.js';
import { applyCoupons, redeemCoupons, type CheckoutDraft } from '../../src/modules/coupons/index.js';
import { ApiError } from '../../src/errors.js';

let s: TestServer;
let account: Account;
const clock = new ManualClock(Date.parse('2026-05-01T12:00:00.000Z'));
const ids: Record<string, string> = {};

async function coupon(body: Record<string, unknown>): Promise<string> {
  const r = await s.api('POST', '/coupons', { body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}

const apply = (draft: Partial<CheckoutDraft>) => applyCoupons(s.daemon.ctx, account, { items: [], currency: 'GTQ', ...draft } as CheckoutDraft);

function reason(draft: Partial<CheckoutDraft>): string[] {
  try {
    apply(draft);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('coupon_not_applicable');
    expect((err as ApiError).status).toBe(422);
    return (err as ApiError).errors!.coupon_codes;
  }
  throw new Error('expected coupon_not_applicable');
}

const shoes = { name: 'Zapatos', amount_in_cents: 30000, quantity: 1, product_id: 'prod_shoes' };
const socks = { name: 'Calcetines', amount_in_cents: 2500, quantity: 2, product_id: 'prod_socks' };
const inline = { name: 'Servicio', amount_in_cents: 10000, quantity: 1 };

beforeAll(async () => {
  s = await startTestServer({ clock });
  account = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock).account(s.installation.sandbox_id)!;
  ids.fixed = await coupon({ name: 'MENOS50', amount_off_in_cents: 5000, currency: 'GTQ' });
  ids.usd = await coupon({ name: 'USD5', amount_off_in_cents: 500, currency: 'USD' });
  ids.shoes = await coupon({ name: 'ZAP20', percent_off: 20, product_ids: ['prod_shoes'], minimum_amount_in_cents: 30000 });
  ids.once = await coupon({ name: 'BIENVENIDA', percent_off: 15, once_per_customer: true });
  ids.limited = await coupon({ name: 'LIMITADO', amount_off_in_cents: 100, max_redemptions: 1 });
  ids.later = await coupon({ name: 'PRONTO', percent_off: 5, starts_at: '2026-05-02T00:00:00Z' });
  ids.bins = await coupon({ name: 'BANCO', percent_off: 5, discount_mode: 'custom_bins', display_name: 'Tarjetas X' });
});
afterAll(() => s.stop());

describe('applying coupons to a checkout (spec 2.7)', () => {
  it('a fixed discount, code typed in any case; shipping neither counts nor is discounted', () => {
    const r = apply({ items: [inline], coupon_codes: [' menos50 '], shipping_amount_in_cents: 3500 });
    expect(r).toEqual({
      subtotal_in_cents: 10000,
      discount_in_cents: 5000,
      total_in_cents: 8500,
      applied: [{ coupon_id: ids.fixed, name: 'MENOS50', display_name: null, amount_off_in_cents: 5000, automatic: false }],
    });
  });

  it('a fixed discount never exceeds the items', () => {
    const r = apply({ items: [{ name: 'x', amount_in_cents: 3000, quantity: 1 }], coupon_codes: ['MENOS50'], shipping_amount_in_cents: 1000 });
    expect(r.discount_in_cents).toBe(3000);
    expect(r.total_in_cents).toBe(1000);
  });

  it('a fixed discount in another currency does not apply', () => {
    expect(reason({ items: [inline], coupon_codes: ['USD5'] })[0]).toMatch(/^USD5: .*currency/);
    expect(apply({ items: [inline], currency: 'USD', coupon_codes: ['USD5'] }).discount_in_cents).toBe(500);
  });

  it('percent on the listed products only, minimum over those products excluding shipping', () => {
    const r = apply({ items: [shoes, socks], coupon_codes: ['ZAP20'], shipping_amount_in_cents: 5000 });
    expect(r.discount_in_cents).toBe(6000);
    expect(r.total_in_cents).toBe(30000 + 5000 - 6000 + 5000);
    const cheapShoes = { ...shoes, amount_in_cents: 29999 };
    // 29999 of shoes + 5000 of socks + shipping: the minimum counts only the coupon's products.
    expect(reason({ items: [cheapShoes, socks], coupon_codes: ['ZAP20'], shipping_amount_in_cents: 50000 })[0]).toMatch(/larger purchase/);
    expect(reason({ items: [socks, inline], coupon_codes: ['ZAP20'] })[0]).toMatch(/none of these products/);
  });

  it('unknown codes and coupons not started yet are refused, naming each code', () => {
    expect(reason({ items: [inline], coupon_codes: ['NOPE', 'PRONTO'] })).toEqual(['NOPE: no such coupon', expect.stringMatching(/^PRONTO: is not active/)]);
    clock.set(Date.parse('2026-05-02T00:00:00.000Z'));
    expect(apply({ items: [inline], coupon_codes: ['PRONTO'] }).discount_in_cents).toBe(500);
  });

  it('card coupons are not applied by code', () => {
    expect(reason({ items: [inline], coupon_codes: ['BANCO'] })[0]).toMatch(/card/);
  });

  it('once per customer: needs a customer and counts only paid checkouts, once per checkout', () => {
    expect(reason({ items: [inline], coupon_codes: ['BIENVENIDA'] })[0]).toMatch(/needs a customer/);
    const draft = { items: [inline], coupon_codes: ['BIENVENIDA'], customer_id: 'cus_ana' };
    const r = apply(draft);
    expect(r.discount_in_cents).toBe(1500);
    // Quoting twice redeems nothing.
    expect(apply(draft).discount_in_cents).toBe(1500);
    const counted = tx(s.daemon.ctx.db, () => redeemCoupons(s.daemon.ctx, account, { checkout_id: 'ch_1', customer_id: 'cus_ana', applied: r.applied }));
    expect(counted).toBe(1);
    // The same settlement repeated counts once.
    expect(tx(s.daemon.ctx.db, () => redeemCoupons(s.daemon.ctx, account, { checkout_id: 'ch_1', customer_id: 'cus_ana', applied: r.applied }))).toBe(0);
    expect(reason(draft)[0]).toMatch(/already used by this customer/);
    expect(apply({ ...draft, customer_id: 'cus_luis' }).discount_in_cents).toBe(1500);
  });

  it('redemption limits: exhausted after max_redemptions paid checkouts', async () => {
    const r = apply({ items: [inline], coupon_codes: ['LIMITADO'] });
    tx(s.daemon.ctx.db, () => redeemCoupons(s.daemon.ctx, account, { checkout_id: 'ch_2', applied: r.applied }));
    const c = await s.api('GET', `/coupons/${ids.limited}`);
    expect(c.body).toMatchObject({ times_redeemed: 1, status: 'exhausted' });
    expect(reason({ items: [inline], coupon_codes: ['LIMITADO'] })[0]).toMatch(/not active/);
  });

  it('expired coupons stop applying at expires_at', async () => {
    await s.api('PATCH', `/coupons/${ids.fixed}`, { body: { expires_at: '2026-05-03T00:00:00Z' } });
    expect(apply({ items: [inline], coupon_codes: ['MENOS50'] }).discount_in_cents).toBe(5000);
    clock.set(Date.parse('2026-05-03T00:00:00.000Z'));
    expect(reason({ items: [inline], coupon_codes: ['MENOS50'] })[0]).toMatch(/not active/);
  });

  it('automatic coupons apply without a code when they fit, and are skipped silently when not', async () => {
    const auto = await coupon({ name: 'AUTO10', percent_off: 10, automatically_applies: true, minimum_amount_in_cents: 20000 });
    expect(apply({ items: [inline] }).applied).toEqual([]);
    const r = apply({ items: [shoes] });
    expect(r.applied).toEqual([{ coupon_id: auto, name: 'AUTO10', display_name: null, amount_off_in_cents: 3000, automatic: true }]);
    // A typed code and the automatic coupon stack; together they never pass the subtotal.
    const both = apply({ items: [shoes], coupon_codes: ['ZAP20'] });
    expect(both.applied.map((a) => [a.name, a.amount_off_in_cents])).toEqual([
      ['ZAP20', 6000],
      ['AUTO10', 3000],
    ]);
    expect(both.total_in_cents).toBe(21000);
    await s.api('PATCH', `/coupons/${auto}`, { body: { automatically_applies: false } });
    expect(apply({ items: [shoes] }).applied).toEqual([]);
  });

  it('redeemCoupons refuses to run outside a transaction', () => {
    expect(() => redeemCoupons(s.daemon.ctx, account, { checkout_id: 'ch_x', applied: [] })).toThrow(/transaction/);
  });
});
