import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { expireHolds, pollPayments, refundLatePayments } from '../../src/modules/bookings/holds.js';
import { customer, ok, pay, rows, salon } from './helpers.js';
import { AccountsService } from '../../src/accounts/service.js';
import { setCheckoutStatus } from '../../src/modules/checkouts/service.js';
import { tx } from '../../src/db/database.js';

const clock = new ManualClock(Date.parse('2026-03-02T08:00:00.000Z'));
let s: TestServer;
let cat: Awaited<ReturnType<typeof salon>>;

beforeAll(async () => {
  s = await startTestServer({ clock });
  cat = await salon(s);
});
afterAll(() => s.stop());

describe('appointments', () => {
  it('books a haircut with policy none: confirmed at once, one service segment, a sync record', async () => {
    const b = await ok(
      s.api('POST', '/bookings', { body: { service_id: cat.cut.id, starts_at: '2026-03-02T10:00:00-06:00', staff_member_id: cat.stylist.id, customer } }),
    );
    expect(b).toMatchObject({
      status: 'confirmed',
      source: 'api',
      kind: 'appointment',
      starts_at: '2026-03-02T16:00:00.000Z',
      ends_at: '2026-03-02T17:00:00.000Z',
      payment_policy: 'none',
      total_in_cents: 15_000,
      paid_in_cents: 0,
      balance_in_cents: 15_000,
      checkout_id: null,
      hold_expires_at: null,
      customer: { name: customer.name, email: customer.email, phone: customer.phone },
    });
    expect(b.id).toMatch(/^bk_[0-9a-z]{16}$/);
    expect(b.customer.id).toMatch(/^cus_/);
    expect(b.segments).toEqual([
      expect.objectContaining({ kind: 'service', service_id: cat.cut.id, staff_member_id: cat.stylist.id, starts_at: b.starts_at, ends_at: b.ends_at }),
    ]);
    const sync = rows(s, "SELECT payload FROM sync_outbox WHERE kind = 'booking'").map((r) => JSON.parse(r.payload));
    expect(sync.some((p) => p.op === 'create' && p.booking.id === b.id)).toBe(true);
    expect((await ok(s.api('GET', `/bookings/${b.id}`), 200)).id).toBe(b.id);
  });

  it('answers slot_unavailable for an overlapping booking of the same stylist and changes nothing', async () => {
    const before = rows(s, 'SELECT count(*) AS n FROM sched_bookings')[0].n;
    const r = await s.api('POST', '/bookings', {
      body: { service_id: cat.cut.id, starts_at: '2026-03-02T16:30:00Z', staff_member_id: cat.stylist.id, customer },
    });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('slot_unavailable');
    expect(rows(s, 'SELECT count(*) AS n FROM sched_bookings')[0].n).toBe(before);
    // Back to back is fine.
    await ok(s.api('POST', '/bookings', { body: { service_id: cat.cut.id, starts_at: '2026-03-02T17:00:00Z', staff_member_id: cat.stylist.id, customer } }));
  });

  it('a service with processing time has two segments and frees the stylist while it processes', async () => {
    const b = await ok(
      s.api('POST', '/bookings', {
        body: {
          service_id: cat.colour.id,
          starts_at: '2026-03-03T15:00:00Z',
          staff_member_id: cat.stylist.id,
          resource_id: cat.chair.id,
          customer,
          payment_policy: 'none',
        },
      }),
    );
    expect(b.segments.map((x: any) => [x.kind, x.starts_at, x.ends_at])).toEqual([
      ['service', '2026-03-03T15:00:00.000Z', '2026-03-03T15:30:00.000Z'],
      ['processing_final', '2026-03-03T16:00:00.000Z', '2026-03-03T16:15:00.000Z'],
    ]);
    expect(b.ends_at).toBe('2026-03-03T16:15:00.000Z');
    // The stylist can take a 30-minute gap... but not with the chair, which stays taken.
    const short = await ok(s.api('POST', '/services', { body: { kind: 'appointment', name: 'Beard', duration_minutes: 30, price_in_cents: 5_000 } }));
    const chairTaken = await s.api('POST', '/bookings', {
      body: { service_id: short.id, starts_at: '2026-03-03T15:30:00Z', staff_member_id: cat.stylist.id, resource_id: cat.chair.id, customer },
    });
    expect(chairTaken.body.code).toBe('slot_unavailable');
    await ok(s.api('POST', '/bookings', { body: { service_id: short.id, starts_at: '2026-03-03T15:30:00Z', staff_member_id: cat.stylist.id, customer } }));
    const overlapFinal = await s.api('POST', '/bookings', {
      body: { service_id: short.id, starts_at: '2026-03-03T16:00:00Z', staff_member_id: cat.stylist.id, customer },
    });
    expect(overlapFinal.body.code).toBe('slot_unavailable');
  });

  it('a retried POST with the same Idempotency-Key replays the booking instead of answering slot_unavailable', async () => {
    const body = { service_id: cat.cut.id, starts_at: '2026-03-02T19:00:00Z', staff_member_id: cat.stylist.id, customer };
    const headers = { 'idempotency-key': 'till-3-booking-0042' };
    const first = await ok(s.api('POST', '/bookings', { body, headers }));
    const again = await ok(s.api('POST', '/bookings', { body, headers }));
    expect(again.id).toBe(first.id);
    expect(rows(s, "SELECT count(*) AS n FROM sched_bookings WHERE starts_at = '2026-03-02T19:00:00.000Z'")[0].n).toBe(1);
    expect((await s.api('POST', '/bookings', { body })).body.code).toBe('slot_unavailable');
  });

  it('rejects bad input with 400 and field errors', async () => {
    const r = await s.api('POST', '/bookings', { body: { service_id: cat.cut.id, starts_at: 'tomorrow', customer } });
    expect(r.status).toBe(400);
    expect(Object.keys(r.body.errors)).toContain('starts_at');
    const none = await s.api('POST', '/bookings', { body: { service_id: cat.cut.id, starts_at: '2026-03-05T10:00:00Z', customer } });
    expect(none.status).toBe(400);
    expect(none.body.errors.staff_member_id).toBeDefined();
    const past = await s.api('POST', '/bookings', {
      body: { service_id: cat.cut.id, starts_at: '2026-03-01T10:00:00Z', staff_member_id: cat.stylist.id, customer },
    });
    expect(past.status).toBe(400);
    const ghost = await s.api('POST', '/bookings', {
      body: { service_id: 'svc_nope', starts_at: '2026-03-05T10:00:00Z', staff_member_id: cat.stylist.id, customer },
    });
    expect(ghost.status).toBe(400);
    expect(ghost.body.errors.service_id).toBeDefined();
  });
});

describe('payment policies and holds', () => {
  it('a deposit booking is pending with a checkout; paying it confirms with paid and balance', async () => {
    const b = await ok(
      s.api('POST', '/bookings', { body: { service_id: cat.colour.id, starts_at: '2026-03-04T15:00:00Z', staff_member_id: cat.stylist.id, customer } }),
    );
    expect(b).toMatchObject({ status: 'pending', payment_policy: 'deposit', total_in_cents: 40_000, paid_in_cents: 0, balance_in_cents: 40_000 });
    expect(b.checkout_id).toMatch(/^ch_/);
    expect(b.checkout_url).toContain(b.checkout_id);
    expect(b.hold_expires_at).toBe('2026-03-02T08:30:00.000Z');
    const co = await ok(s.api('GET', `/checkouts/${b.checkout_id}`), 200);
    expect(co).toMatchObject({ amount_in_cents: 10_000, status: 'unpaid', customer_id: b.customer.id, expires_at: b.hold_expires_at });
    await pay(s, b.checkout_id);
    const after = await ok(s.api('GET', `/bookings/${b.id}`), 200);
    expect(after).toMatchObject({ status: 'confirmed', paid_in_cents: 10_000, balance_in_cents: 30_000, hold_expires_at: null });
    expect(after.accepted_at).not.toBeNull();

    const charged = await ok(s.api('POST', `/bookings/${b.id}/balance_charge`));
    expect(charged.balance_checkout_id).toMatch(/^ch_/);
    expect(charged.balance_checkout_url).toContain(charged.balance_checkout_id);
    const again = await ok(s.api('POST', `/bookings/${b.id}/balance_charge`));
    expect(again.balance_checkout_id).toBe(charged.balance_checkout_id);
    expect((await ok(s.api('GET', `/checkouts/${charged.balance_checkout_id}`), 200)).amount_in_cents).toBe(30_000);
    await pay(s, charged.balance_checkout_id);
    expect(await ok(s.api('GET', `/bookings/${b.id}`), 200)).toMatchObject({ paid_in_cents: 40_000, balance_in_cents: 0 });
    expect((await s.api('POST', `/bookings/${b.id}/balance_charge`)).body.code).toBe('no_balance');
  });

  it('a failed payment gets the booking a fresh checkout within the same hold', async () => {
    const b = await ok(
      s.api('POST', '/bookings', { body: { service_id: cat.colour.id, starts_at: '2026-03-04T19:00:00Z', staff_member_id: cat.stylist.id, customer } }),
    );
    await ok(s.api('POST', `/test_helpers/checkouts/${b.checkout_id}/pay`, { body: { method: 'card', outcome: 'failed' } }), 200);
    const renewed = await ok(s.api('GET', `/bookings/${b.id}`), 200);
    expect(renewed).toMatchObject({ status: 'pending', paid_in_cents: 0, hold_expires_at: b.hold_expires_at });
    expect(renewed.checkout_id).not.toBe(b.checkout_id);
    expect((await ok(s.api('GET', `/checkouts/${renewed.checkout_id}`), 200)).amount_in_cents).toBe(10_000);
    expect((await ok(s.api('GET', `/bookings/${b.id}`), 200)).checkout_id).toBe(renewed.checkout_id);
    await pay(s, renewed.checkout_id);
    expect(await ok(s.api('GET', `/bookings/${b.id}`), 200)).toMatchObject({ status: 'confirmed', paid_in_cents: 10_000 });
  });

  it('a balance collected outside is marked, leaving nothing to charge', async () => {
    const b = await ok(
      s.api('POST', '/bookings', { body: { service_id: cat.cut.id, starts_at: '2026-03-04T18:00:00Z', staff_member_id: cat.stylist.id, customer } }),
    );
    const marked = await ok(s.api('POST', `/bookings/${b.id}/balance_paid_outside`));
    expect(marked).toMatchObject({ balance_in_cents: 0, paid_in_cents: 0, balance_paid_outside_at: '2026-03-02T08:00:00.000Z' });
    expect((await s.api('POST', `/bookings/${b.id}/balance_charge`)).body.code).toBe('no_balance');
  });

  it('an unpaid hold is released when it expires (by the clock), freeing the slot', async () => {
    const body = { service_id: cat.colour.id, starts_at: '2026-03-05T15:00:00Z', staff_member_id: cat.stylist.id, customer };
    const b = await ok(s.api('POST', '/bookings', { body }));
    expect((await s.api('POST', '/bookings', { body })).body.code).toBe('slot_unavailable');
    clock.advance(29 * 60_000);
    expect(expireHolds(s.daemon.ctx)).toBe(0);
    clock.advance(60_000);
    expect(expireHolds(s.daemon.ctx)).toBe(1);
    expect(await ok(s.api('GET', `/bookings/${b.id}`), 200)).toMatchObject({
      status: 'cancelled',
      cancelled_by: 'system',
      cancellation_reason: 'hold_expired',
    });
    const retaken = await ok(s.api('POST', '/bookings', { body }));
    expect(retaken.status).toBe('pending');
  });

  it('a hold whose payment is under way (a terminal authorizing) is not released until it settles', async () => {
    const body = { service_id: cat.colour.id, starts_at: '2026-03-06T18:00:00Z', staff_member_id: cat.stylist.id, customer };
    const b = await ok(s.api('POST', '/bookings', { body }));
    const account = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock).account(s.installation.sandbox_id)!;
    tx(s.daemon.ctx.db, () => setCheckoutStatus(s.daemon.ctx, account, b.checkout_id, { type: 'START_PAYMENT' }));
    clock.advance(31 * 60_000);
    expireHolds(s.daemon.ctx);
    expect((await ok(s.api('GET', `/bookings/${b.id}`), 200)).status).toBe('pending');
    tx(s.daemon.ctx.db, () => setCheckoutStatus(s.daemon.ctx, account, b.checkout_id, { type: 'ABANDON_PAYMENT' }));
    expireHolds(s.daemon.ctx);
    expect((await ok(s.api('GET', `/bookings/${b.id}`), 200)).status).toBe('cancelled');
  });

  it('a hold paid before the sweep is confirmed, not released', async () => {
    const body = { service_id: cat.colour.id, starts_at: '2026-03-06T15:00:00Z', staff_member_id: cat.stylist.id, customer };
    const b = await ok(s.api('POST', '/bookings', { body }));
    await pay(s, b.checkout_id);
    clock.advance(31 * 60_000);
    expireHolds(s.daemon.ctx);
    expect((await ok(s.api('GET', `/bookings/${b.id}`), 200)).status).toBe('confirmed');
  });
});

describe('a checkout paid after its booking was cancelled', () => {
  it('is noticed by the sweep and refunded once', async () => {
    const b = await ok(
      s.api('POST', '/bookings', { body: { service_id: cat.colour.id, starts_at: '2026-03-07T15:00:00Z', staff_member_id: cat.stylist.id, customer } }),
    );
    await ok(s.api('POST', `/bookings/${b.id}/cancellation`));
    await pay(s, b.checkout_id);
    pollPayments(s.daemon.ctx);
    expect(rows(s, 'SELECT refund_due, refund_reason, paid_in_cents FROM sched_bookings WHERE id = ?', b.id)[0]).toEqual({
      refund_due: 1,
      refund_reason: 'late_payment',
      paid_in_cents: 10_000,
    });
    expect(await refundLatePayments(s.daemon.ctx)).toBe(1);
    expect(await refundLatePayments(s.daemon.ctx)).toBe(0);
    const after = await ok(s.api('GET', `/bookings/${b.id}`), 200);
    expect(after).toMatchObject({ status: 'cancelled' });
    expect(after.refund_ids).toHaveLength(1);
    expect(rows(s, 'SELECT count(*) AS n FROM refunds WHERE id = ?', after.refund_ids[0])[0].n).toBe(1);
  });

  it('a rescheduled pending booking hands its checkout to the new booking; paying it confirms the new one, refunds nothing', async () => {
    const b = await ok(
      s.api('POST', '/bookings', { body: { service_id: cat.colour.id, starts_at: '2026-03-08T15:00:00Z', staff_member_id: cat.stylist.id, customer } }),
    );
    const moved = await ok(s.api('POST', `/bookings/${b.id}/reschedule`, { body: { starts_at: '2026-03-08T17:00:00Z' } }));
    expect(moved).toMatchObject({ status: 'pending', checkout_id: b.checkout_id, rescheduled_from_id: b.id });
    await pay(s, b.checkout_id);
    pollPayments(s.daemon.ctx);
    expect(await refundLatePayments(s.daemon.ctx)).toBe(0);
    expect(await ok(s.api('GET', `/bookings/${moved.id}`), 200)).toMatchObject({ status: 'confirmed', paid_in_cents: 10_000 });
    expect(await ok(s.api('GET', `/bookings/${b.id}`), 200)).toMatchObject({ status: 'cancelled', checkout_id: null, refund_ids: [] });
  });
});

describe('lifecycle', () => {
  async function booking(startsAt: string, extra: Record<string, unknown> = {}) {
    return ok(s.api('POST', '/bookings', { body: { service_id: cat.cut.id, starts_at: startsAt, staff_member_id: cat.stylist.id, customer, ...extra } }));
  }

  it('cancellation frees the slot; a second cancellation is not_holding', async () => {
    const b = await booking('2026-03-10T15:00:00Z');
    const c = await ok(s.api('POST', `/bookings/${b.id}/cancellation`, { body: { reason: 'customer called' } }));
    expect(c).toMatchObject({ status: 'cancelled', cancelled_by: 'merchant', cancellation_reason: 'customer called' });
    expect((await s.api('POST', `/bookings/${b.id}/cancellation`)).body.code).toBe('not_holding');
    await booking('2026-03-10T15:00:00Z');
  });

  it('declination: only pending (not_pending otherwise); refunds what was paid', async () => {
    const confirmed = await booking('2026-03-11T15:00:00Z');
    expect((await s.api('POST', `/bookings/${confirmed.id}/declination`)).body.code).toBe('not_pending');
    const b = await booking('2026-03-11T17:00:00Z', { payment_policy: 'full', requires_acceptance: true });
    await pay(s, b.checkout_id);
    const paid = await ok(s.api('GET', `/bookings/${b.id}`), 200);
    expect(paid).toMatchObject({ status: 'pending', paid_in_cents: 15_000, balance_in_cents: 0 });
    const d = await ok(s.api('POST', `/bookings/${b.id}/declination`));
    expect(d).toMatchObject({ status: 'cancelled', cancelled_by: 'merchant', cancellation_reason: 'declined' });
    expect(d.refund_ids).toHaveLength(1);
    const refunds = rows(s, 'SELECT * FROM refunds WHERE id = ?', d.refund_ids[0]);
    expect(refunds).toHaveLength(1);
    expect((await s.api('POST', `/bookings/${b.id}/declination`)).body.code).toBe('not_pending');
  });

  it('declining a booking whose payment was refunded at the counter counts that refund, not 422 refund_failed (issue 15)', async () => {
    const b = await booking('2026-03-11T19:00:00Z', { payment_policy: 'full', requires_acceptance: true });
    await pay(s, b.checkout_id);
    expect((await ok(s.api('GET', `/bookings/${b.id}`), 200)).paid_in_cents).toBe(15_000);
    const pi = rows(s, 'SELECT payment_intent_ids AS p FROM sched_bookings WHERE id = ?', b.id)[0].p.slice(2, -2);
    const counter = await ok(s.api('POST', '/refunds', { body: { payment_intent_id: pi } }));
    const d = await s.api('POST', `/bookings/${b.id}/declination`);
    expect(d.status).toBe(201);
    expect(d.body).toMatchObject({ status: 'cancelled', cancellation_reason: 'declined', refund_ids: [counter.id] });
    expect(rows(s, 'SELECT count(*) AS n FROM refunds WHERE payment_intent_id = ?', pi)[0].n).toBe(1);
  });

  it('acceptance, check-in, completion; no-show only once started; wrong moves are booking_state_invalid', async () => {
    const b = await booking('2026-03-12T15:00:00Z', { requires_acceptance: true });
    expect(b.status).toBe('pending');
    expect((await s.api('POST', `/bookings/${b.id}/check_in`)).body.code).toBe('booking_state_invalid');
    expect((await ok(s.api('POST', `/bookings/${b.id}/acceptance`))).status).toBe('confirmed');
    expect((await ok(s.api('POST', `/bookings/${b.id}/check_in`))).status).toBe('checked_in');
    expect((await ok(s.api('POST', `/bookings/${b.id}/completion`))).status).toBe('completed');
    expect((await s.api('POST', `/bookings/${b.id}/cancellation`)).body.code).toBe('not_holding');

    const n = await booking('2026-03-13T15:00:00Z');
    expect((await s.api('POST', `/bookings/${n.id}/no_show`)).body.code).toBe('booking_state_invalid');
    const saved = clock.now();
    clock.set(Date.parse('2026-03-13T15:20:00Z'));
    expect((await ok(s.api('POST', `/bookings/${n.id}/no_show`))).status).toBe('no_show');
    clock.set(saved);
  });

  it('reschedule moves the booking and records rescheduled_from_id', async () => {
    const b = await booking('2026-03-14T15:00:00Z');
    const moved = await ok(s.api('POST', `/bookings/${b.id}/reschedule`, { body: { starts_at: '2026-03-14T15:30:00Z' } }));
    expect(moved).toMatchObject({ status: 'confirmed', starts_at: '2026-03-14T15:30:00.000Z', rescheduled_from_id: b.id, customer: { id: b.customer.id } });
    expect(await ok(s.api('GET', `/bookings/${b.id}`), 200)).toMatchObject({ status: 'cancelled', cancellation_reason: 'rescheduled' });
    const other = await booking('2026-03-14T17:00:00Z');
    expect((await s.api('POST', `/bookings/${other.id}/reschedule`, { body: { starts_at: '2026-03-14T16:00:00Z' } })).body.code).toBe('slot_unavailable');
    expect((await ok(s.api('GET', `/bookings/${other.id}`), 200)).status).toBe('confirmed');
  });

  it('a weekly series books every occurrence or none', async () => {
    const series = await ok(
      s.api('POST', '/booking_series', {
        body: {
          service_id: cat.cut.id,
          starts_at: '2026-04-01T15:00:00Z',
          staff_member_id: cat.stylist.id,
          customer,
          repeat: { frequency: 'weekly', count: 4 },
        },
      }),
    );
    expect(series.bookings.map((b: any) => b.starts_at)).toEqual([
      '2026-04-01T15:00:00.000Z',
      '2026-04-08T15:00:00.000Z',
      '2026-04-15T15:00:00.000Z',
      '2026-04-22T15:00:00.000Z',
    ]);
    expect(new Set(series.bookings.map((b: any) => b.booking_series_id))).toEqual(new Set([series.id]));
    const before = rows(s, 'SELECT count(*) AS n FROM sched_bookings')[0].n;
    const clash = await s.api('POST', '/booking_series', {
      body: { service_id: cat.cut.id, starts_at: '2026-03-25T15:30:00Z', staff_member_id: cat.stylist.id, customer, repeat: { frequency: 'weekly', count: 3 } },
    });
    expect(clash.status).toBe(422);
    expect(clash.body).toMatchObject({ code: 'slot_unavailable', occurrence: 2 });
    expect(rows(s, 'SELECT count(*) AS n FROM sched_bookings')[0].n).toBe(before);
    const listed = await ok(s.api('GET', `/bookings?booking_series_id=${series.id}`), 200);
    expect(listed).toHaveLength(4);
  });
});
