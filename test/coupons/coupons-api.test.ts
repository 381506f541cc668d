import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';

let s: TestServer;
const clock = new ManualClock(Date.parse('2026-05-01T12:00:00.000Z'));

beforeAll(async () => {
  s = await startTestServer({ clock });
});
afterAll(() => s.stop());

describe('coupons API (spec 2.7, 4.10)', () => {
  it('creates a coupon with every field of 2.7', async () => {
    const r = await s.api('POST', '/coupons', {
      body: {
        name: 'VERANO10',
        percent_off: 10,
        duration: 'repeating',
        duration_in_payments: 3,
        max_redemptions: 50,
        minimum_amount_in_cents: 10000,
        once_per_customer: true,
        product_ids: ['prod_a'],
        starts_at: '2026-04-01T00:00:00-06:00',
        expires_at: '2026-12-31T23:59:59Z',
      },
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^coup_[0-9a-z]{16}$/),
      account_id: s.installation.sandbox_id,
      name: 'VERANO10',
      discount_mode: 'code',
      display_name: null,
      amount_off_in_cents: null,
      percent_off: 10,
      automatically_applies: false,
      max_redemptions: 50,
      times_redeemed: 0,
      currency: null,
      duration: 'repeating',
      duration_in_payments: 3,
      minimum_amount_in_cents: 10000,
      once_per_customer: true,
      product_ids: ['prod_a'],
      starts_at: '2026-04-01T06:00:00.000Z',
      expires_at: '2026-12-31T23:59:59.000Z',
      status: 'active',
      live_mode: false,
      created_at: '2026-05-01T12:00:00.000Z',
    });
    const got = await s.api('GET', `/coupons/${r.body.id}`);
    expect(got.body).toEqual(r.body);
  });

  it('a fixed discount takes the account currency by default', async () => {
    const r = await s.api('POST', '/coupons', { body: { name: 'q25', amount_off_in_cents: 2500 } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ currency: 'GTQ', duration: 'once', percent_off: null, amount_off_in_cents: 2500 });
  });

  it.each([
    [{ name: 'X1' }, 'amount_off_in_cents'],
    [{ name: 'X2', amount_off_in_cents: 100, percent_off: 5 }, 'amount_off_in_cents'],
    [{ name: 'X3', percent_off: 101 }, 'percent_off'],
    [{ name: 'X4', percent_off: 0 }, 'percent_off'],
    [{ name: 'X5', percent_off: 5, duration: 'repeating' }, 'duration_in_payments'],
    [{ name: 'X6', percent_off: 5, duration_in_payments: 2 }, 'duration_in_payments'],
    [{ name: 'X7', percent_off: 5, currency: 'GTQ' }, 'currency'],
    [{ name: 'X8', amount_off_in_cents: '100.5' }, 'amount_off_in_cents'],
    [{ name: 'X9', percent_off: 5, starts_at: '2026-06-01T00:00:00Z', expires_at: '2026-05-01T00:00:00Z' }, 'expires_at'],
    [{ name: 'X10', percent_off: 5, discount_mode: 'custom_bins' }, 'display_name'],
    [{ name: 'verano10', percent_off: 5 }, 'name'],
  ])('400 for %j', async (body, field) => {
    const before = await s.api('GET', '/coupons?status=all&items=100');
    const r = await s.api('POST', '/coupons', { body });
    expect(r.status).toBe(400);
    expect(r.body.errors[field]).toBeDefined();
    const after = await s.api('GET', '/coupons?status=all&items=100');
    expect(after.body).toHaveLength(before.body.length);
  });

  it('lists active coupons, newest first, 10 per page by default with page headers', async () => {
    for (let i = 0; i < 11; i++) {
      clock.advance(1000);
      await s.api('POST', '/coupons', { body: { name: `BULK${i}`, amount_off_in_cents: 100 + i } });
    }
    const p1 = await s.api('GET', '/coupons');
    expect(p1.status).toBe(200);
    expect(p1.body).toHaveLength(10);
    expect(p1.body[0].name).toBe('BULK10');
    expect(p1.headers['total-count']).toBe('13');
    expect(p1.headers['total-pages']).toBe('2');
    const p2 = await s.api('GET', '/coupons?page=2');
    expect(p2.body.map((c: any) => c.name)).toEqual(['BULK0', 'q25', 'VERANO10']);
    const small = await s.api('GET', '/coupons?page=3&items=5');
    expect(small.body).toHaveLength(3);
    expect((await s.api('GET', '/coupons?items=0')).status).toBe(400);
    expect((await s.api('GET', '/coupons?page=0')).status).toBe(400);
  });

  it('updates a coupon; archived and expired coupons leave the active list', async () => {
    const list = (await s.api('GET', '/coupons?items=100')).body;
    const bulk0 = list.find((c: any) => c.name === 'BULK0');
    const archived = await s.api('PATCH', `/coupons/${bulk0.id}`, { body: { status: 'archived' } });
    expect(archived.status).toBe(200);
    expect(archived.body.status).toBe('archived');
    const bulk1 = list.find((c: any) => c.name === 'BULK1');
    const exp = await s.api('PUT', `/coupons/${bulk1.id}`, { body: { expires_at: '2026-05-01T12:00:30Z', automatically_applies: true } });
    expect(exp.body).toMatchObject({ status: 'active', automatically_applies: true });
    clock.advance(60_000);
    expect((await s.api('GET', `/coupons/${bulk1.id}`)).body.status).toBe('expired');
    const active = (await s.api('GET', '/coupons?items=100')).body.map((c: any) => c.name);
    expect(active).not.toContain('BULK0');
    expect(active).not.toContain('BULK1');
    expect(active).toHaveLength(11);
    const expired = (await s.api('GET', '/coupons?status=expired')).body.map((c: any) => c.name);
    expect(expired).toEqual(['BULK1']);
    // An archived coupon frees its code.
    expect((await s.api('POST', '/coupons', { body: { name: 'bulk0', percent_off: 1 } })).status).toBe(201);
  });

  it('an update that renames onto another code, or bad dates, is 400 and changes nothing', async () => {
    const list = (await s.api('GET', '/coupons?items=100')).body;
    const c = list.find((x: any) => x.name === 'BULK2');
    expect((await s.api('PATCH', `/coupons/${c.id}`, { body: { name: 'verano10' } })).status).toBe(400);
    expect((await s.api('PATCH', `/coupons/${c.id}`, { body: { starts_at: '2027-01-01T00:00:00Z', expires_at: '2026-01-01T00:00:00Z' } })).status).toBe(400);
    expect((await s.api('GET', `/coupons/${c.id}`)).body).toEqual(c);
  });

  it('coupons of another account or environment are 404', async () => {
    const c = (await s.api('GET', '/coupons')).body[0];
    expect((await s.api('GET', `/coupons/${c.id}`, { key: s.installation.keys.live })).status).toBe(404);
    expect((await s.api('PATCH', `/coupons/${c.id}`, { key: s.installation.keys.live, body: { name: 'Z' } })).status).toBe(404);
    expect((await s.api('GET', '/coupons', { key: s.installation.keys.live })).body).toEqual([]);
  });
});
