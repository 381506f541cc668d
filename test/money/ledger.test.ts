import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { AccountsService } from '../../src/accounts/service.js';
import { feeFor } from '../../src/modules/ledger/service.js';
import { paidCheckout } from './helpers.js';

let s: TestServer;
const clock = new ManualClock(Date.parse('2026-03-01T10:00:00.000Z'));
let orgKey: string;
let child: { id: string };

beforeAll(async () => {
  s = await startTestServer({ clock });
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  orgKey = accounts.createKey({ organizationId: s.installation.organization_id, environment: 'test' }).key;
  // A second sandbox in the organization, so organization reads span two accounts.
  child = accounts.createAccount({ name: 'Second', organizationId: s.installation.organization_id }).sandbox;
  accounts.createKey({ accountId: child.id, environment: 'test' });
  // Day 1: two GTQ charges; day 2: one USD charge and a refund.
  await paidCheckout(s, 10_000);
  clock.advance(60_000);
  await paidCheckout(s, 20_000);
  clock.set(Date.parse('2026-03-02T15:00:00.000Z'));
  await paidCheckout(s, 5_000, { currency: 'USD' });
  const { pay } = await paidCheckout(s, 8_000);
  await s.api('POST', '/refunds', { body: { payment_intent_id: pay.payment_intent_id } });
});
afterAll(() => s.stop());

describe('fees', () => {
  it('takes 4.5% by default, VAT withheld being 12% of the commission, and follows account settings', () => {
    expect(feeFor({ settings: {} }, 10_000)).toEqual({ fee_in_cents: -450, commission_in_cents: 402, vat_withheld_in_cents: 48 });
    expect(feeFor({ settings: { fee_percent: 3, fee_fixed_in_cents: 200 } }, 10_000)).toEqual({
      fee_in_cents: -500,
      commission_in_cents: 446,
      vat_withheld_in_cents: 54,
    });
    expect(feeFor({ settings: {} }, 0).fee_in_cents).toBe(-0);
  });
});

describe('GET /balance_transactions', () => {
  it('lists newest first with the list headers, amount + fee = net and a chained balance', async () => {
    const res = await s.api('GET', '/balance_transactions');
    expect(res.status).toBe(200);
    expect(res.body.map((r: any) => [r.type, r.currency, r.amount_in_cents])).toEqual([
      ['refund', 'GTQ', -8000],
      ['charge', 'GTQ', 8000],
      ['charge', 'USD', 5000],
      ['charge', 'GTQ', 20_000],
      ['charge', 'GTQ', 10_000],
    ]);
    for (const r of res.body) expect(r.amount_in_cents + r.fee_in_cents).toBe(r.net_amount_in_cents);
    const gtq = res.body.filter((r: any) => r.currency === 'GTQ').reverse();
    let balance = 0;
    for (const r of gtq) {
      balance += r.net_amount_in_cents;
      expect(r.balance_after_in_cents).toBe(balance);
    }
    expect(res.headers['total-count']).toBe('5');
    expect(res.headers['current-page']).toBe('1');
    expect(res.headers['total-pages']).toBe('1');
    expect(res.headers.link).toContain('rel="first"');
    const balances = await s.api('GET', '/balances');
    expect(balances.body).toEqual([
      { currency: 'GTQ', available_in_cents: balance, pending_in_cents: 0 },
      { currency: 'USD', available_in_cents: 4775, pending_in_cents: 0 },
    ]);
  });

  it('filters by currency, type and a date range (a date alone covers the whole day)', async () => {
    const usd = await s.api('GET', '/balance_transactions?currency=USD');
    expect(usd.body).toHaveLength(1);
    const refunds = await s.api('GET', '/balance_transactions?type=refund');
    expect(refunds.body.map((r: any) => r.type)).toEqual(['refund']);
    const day1 = await s.api('GET', '/balance_transactions?from_time=2026-03-01&until_time=2026-03-01');
    expect(day1.body.map((r: any) => r.amount_in_cents)).toEqual([20_000, 10_000]);
    const range = await s.api('GET', '/balance_transactions?from_time=2026-03-01T10:00:30Z&until_time=2026-03-02T15:00:00-00:00');
    expect(range.body).toHaveLength(4);
  });

  it('paginates with items 1 to 100 and answers 400 outside it', async () => {
    const page2 = await s.api('GET', '/balance_transactions?items=2&page=2');
    expect(page2.body).toHaveLength(2);
    expect(page2.headers['total-pages']).toBe('3');
    expect(page2.headers.link).toContain('rel="next"');
    expect(page2.headers.link).toContain('rel="prev"');
    expect((await s.api('GET', '/balance_transactions?page=9')).body).toEqual([]);
    for (const q of ['items=0', 'items=101', 'page=0', 'items=abc']) {
      const res = await s.api('GET', `/balance_transactions?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.errors, q).toBeTypeOf('object');
    }
  });

  it('answers 400 for half a date range, a bad date or an unknown type', async () => {
    const half = await s.api('GET', '/balance_transactions?from_time=2026-03-01');
    expect(half.status).toBe(400);
    expect(half.body.code).toBe('invalid_date_range');
    expect((await s.api('GET', '/balance_transactions?until_time=2026-03-01')).status).toBe(400);
    expect((await s.api('GET', '/balance_transactions?from_time=yesterday&until_time=2026-03-01')).status).toBe(400);
    expect((await s.api('GET', '/balance_transactions?type=gift')).status).toBe(400);
  });

  it('GET by id answers 404 for another account or environment', async () => {
    const [row] = (await s.api('GET', '/balance_transactions')).body;
    expect((await s.api('GET', `/balance_transactions/${row.id}`)).status).toBe(200);
    expect((await s.api('GET', `/balance_transactions/${row.id}`, { key: s.installation.keys.live })).status).toBe(404);
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const otherKey = accounts.createKey({ accountId: child.id, environment: 'test' }).key;
    expect((await s.api('GET', `/balance_transactions/${row.id}`, { key: otherKey })).status).toBe(404);
    expect((await s.api('GET', '/balance_transactions', { key: otherKey })).body).toEqual([]);
  });
});

describe('organization keys', () => {
  it('read every account’s balances and ledger rows, each with its account_id', async () => {
    const res = await s.api('GET', '/balances', { key: orgKey });
    expect(res.status).toBe(200);
    const ids = new Set(res.body.map((b: any) => b.account_id));
    expect(ids).toEqual(new Set([s.installation.sandbox_id, child.id]));
    const mine = res.body.find((b: any) => b.account_id === s.installation.sandbox_id && b.currency === 'USD');
    expect(mine.available_in_cents).toBe(4775);
    const ledger = await s.api('GET', '/balance_transactions', { key: orgKey });
    expect(ledger.body).toHaveLength(5);
    const one = await s.api('GET', '/balances', { key: orgKey, headers: { 'x-account-id': child.id } });
    expect(one.body.every((b: any) => b.account_id === undefined)).toBe(true);
  });
});

describe('checkout lifecycle on the injected clock', () => {
  it('an expired checkout cannot be paid; a terminal may mark one in progress and back', async () => {
    const { setCheckoutStatus } = await import('../../src/modules/checkouts/service.js');
    const expires = new Date(clock.now() + 60_000).toISOString();
    const co = await s.api('POST', '/checkouts', { body: { items: [{ amount_in_cents: 1000 }], expires_at: expires } });
    expect(co.status).toBe(201);
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const sandbox = accounts.account(s.installation.sandbox_id)!;
    expect(setCheckoutStatus(s.daemon.ctx, sandbox, co.body.id, { type: 'START_PAYMENT' }).status).toBe('payment_in_progress');
    const patch = await s.api('PATCH', `/checkouts/${co.body.id}`, { body: { metadata: { x: 1 } } });
    expect(patch.body.code).toBe('checkout_not_modifiable');
    expect(setCheckoutStatus(s.daemon.ctx, sandbox, co.body.id, { type: 'ABANDON_PAYMENT' }).status).toBe('unpaid');
    clock.advance(61_000);
    const pay = await s.api('POST', `/test_helpers/checkouts/${co.body.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
    expect(pay.status).toBe(422);
    expect(pay.body.code).toBe('checkout_expired');
    expect((await s.api('GET', `/checkouts/${co.body.id}`)).body.status).toBe('unpaid');
  });
});
