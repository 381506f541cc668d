import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { AccountsService } from '../../src/accounts/service.js';
import { MODULES } from '../../src/modules/index.js';
import { createBookingsModule } from '../../src/modules/bookings/index.js';
import { moneyPort } from '../../src/modules/bookings/money-adapter.js';
import { ok, pay, rows } from './helpers.js';

const clock = new ManualClock(Date.parse('2026-03-02T08:00:00.000Z'));
let s: TestServer;
let yoga: any;
let teacher: any;
let studio: any;

// Fault at the boundary to the money area: a test sets which refunds fail, the rest go through.
let refundFault: ((paymentIntentId: string) => void) | undefined;
const bookings = createBookingsModule({
  money: {
    ...moneyPort,
    refundPaymentIntent(ctx, account, pi) {
      refundFault?.(pi);
      return moneyPort.refundPaymentIntent(ctx, account, pi);
    },
  },
});

beforeAll(async () => {
  s = await startTestServer({ clock, modules: MODULES.map((m) => (m.name === 'bookings' ? bookings : m)) });
  yoga = await ok(
    s.api('POST', '/services', { body: { kind: 'class', name: 'Yoga', duration_minutes: 60, price_in_cents: 8_000, capacity: 10, payment_policy: 'full' } }),
  );
  teacher = await ok(s.api('POST', '/staff_members', { body: { name: 'Luis' } }));
  studio = await ok(s.api('POST', '/resources', { body: { name: 'Studio', kind: 'room' } }));
});
afterAll(() => s.stop());

async function session(startsAt: string) {
  return ok(s.api('POST', '/class_sessions', { body: { service_id: yoga.id, starts_at: startsAt, staff_member_id: teacher.id, resource_id: studio.id } }));
}

async function paidSeat(sessionId: string, i: number) {
  const b = await ok(s.api('POST', '/bookings', { body: { class_session_id: sessionId, customer: { email: `seat${i}@example.com`, name: `Seat ${i}` } } }));
  await pay(s, b.checkout_id);
  return ok(s.api('GET', `/bookings/${b.id}`), 200);
}

describe('class sessions', () => {
  it('creates, lists and reads sessions; the session takes its teacher and room', async () => {
    const c = await session('2026-03-05T12:00:00Z');
    expect(c).toMatchObject({
      service_id: yoga.id,
      name: 'Yoga',
      capacity: 10,
      seats_taken: 0,
      seats_left: 10,
      seat_booking_ids: [],
      cancelled_at: null,
      ends_at: '2026-03-05T13:00:00.000Z',
    });
    expect(c.id).toMatch(/^cls_/);
    const clash = await s.api('POST', '/class_sessions', { body: { service_id: yoga.id, starts_at: '2026-03-05T12:30:00Z', staff_member_id: teacher.id } });
    expect(clash.body.code).toBe('slot_unavailable');
    const cut = await ok(s.api('POST', '/services', { body: { kind: 'appointment', name: 'Massage', duration_minutes: 60, price_in_cents: 1000 } }));
    const appt = await s.api('POST', '/bookings', {
      body: { service_id: cut.id, starts_at: '2026-03-05T12:15:00Z', resource_id: studio.id, customer: { email: 'x@example.com' } },
    });
    expect(appt.body.code).toBe('slot_unavailable');
    const list = await ok(s.api('GET', `/class_sessions?service_id=${yoga.id}`), 200);
    expect(list.map((x: any) => x.id)).toContain(c.id);
    const seat = await ok(s.api('POST', '/bookings', { body: { class_session_id: c.id, customer: { email: 'a@example.com' } } }));
    expect(seat).toMatchObject({
      kind: 'class_seat',
      segments: [],
      class_session_id: c.id,
      staff_member_id: teacher.id,
      status: 'pending',
      total_in_cents: 8_000,
    });
    expect((await ok(s.api('GET', `/class_sessions/${c.id}`), 200)).seat_booking_ids).toEqual([seat.id]);
  });

  it('cancellation refunds every paid seat; failed refunds answer seats_left and a retry finishes without refunding twice', async () => {
    const c = await session('2026-03-06T12:00:00Z');
    const seats = [];
    for (let i = 0; i < 5; i++) seats.push(await paidSeat(c.id, i));
    const unpaid = await ok(s.api('POST', '/bookings', { body: { class_session_id: c.id, customer: { email: 'unpaid@example.com' } } }));
    expect(seats.every((b) => b.status === 'confirmed' && b.paid_in_cents === 8_000)).toBe(true);

    // Fault at the boundary to the money area: refunds of chosen seats fail until healed.
    const failing = new Set([seats[1].id, seats[3].id]);
    const intentOf = new Map<string, string>();
    for (const b of seats) intentOf.set(rows(s, 'SELECT payment_intent_ids AS p FROM sched_bookings WHERE id = ?', b.id)[0].p.slice(2, -2), b.id);
    const calls: string[] = [];
    refundFault = (pi) => {
      calls.push(pi);
      if (failing.has(intentOf.get(pi)!)) throw new Error('processor unavailable');
    };

    const first = await s.api('POST', `/class_sessions/${c.id}/cancellation`);
    expect(first.status).toBe(422);
    expect(first.body.code).toBe('seats_left');
    expect([...first.body.booking_ids].sort()).toEqual([seats[1].id, seats[3].id].sort());
    const read = await ok(s.api('GET', `/class_sessions/${c.id}`), 200);
    expect(read.cancelled_at).not.toBeNull();
    for (const b of [...seats, unpaid]) {
      expect(await ok(s.api('GET', `/bookings/${b.id}`), 200)).toMatchObject({ status: 'cancelled', cancelled_by: 'merchant' });
    }
    // The teacher and the room are free again.
    await session('2026-03-06T12:00:00Z');

    failing.delete(seats[1].id);
    const second = await s.api('POST', `/class_sessions/${c.id}/cancellation`);
    expect(second.body).toMatchObject({ code: 'seats_left', booking_ids: [seats[3].id] });
    failing.clear();
    const third = await s.api('POST', `/class_sessions/${c.id}/cancellation`);
    expect(third.status).toBe(201);
    expect(third.body.id).toBe(c.id);

    // Every paid seat refunded exactly once; the unpaid seat not at all.
    const refunds = rows(
      s,
      `SELECT payment_intent_id, count(*) AS n FROM refunds WHERE payment_intent_id IN (${[...intentOf.keys()].map(() => '?').join(',')}) GROUP BY payment_intent_id`,
      ...intentOf.keys(),
    );
    expect(refunds).toHaveLength(5);
    expect(refunds.every((r) => r.n === 1)).toBe(true);
    // Refund attempts: 5 the first time (2 failed), 2 the second (1 failed), 1 the third.
    expect(calls).toHaveLength(8);
    for (const b of seats) expect((await ok(s.api('GET', `/bookings/${b.id}`), 200)).refund_ids).toHaveLength(1);
    expect((await ok(s.api('GET', `/bookings/${unpaid.id}`), 200)).refund_ids).toEqual([]);

    const fourth = await s.api('POST', `/class_sessions/${c.id}/cancellation`);
    expect(fourth.body.code).toBe('not_cancellable');
    refundFault = undefined;
  });

  it('a seat already refunded at the counter counts as refunded: the cancellation finishes; a cancelled session has no seats left (issue 15)', async () => {
    const c = await session('2026-03-06T16:00:00Z');
    const seats = [await paidSeat(c.id, 20), await paidSeat(c.id, 21)];
    const pi = rows(s, 'SELECT payment_intent_ids AS p FROM sched_bookings WHERE id = ?', seats[0].id)[0].p.slice(2, -2);
    const counter = await ok(s.api('POST', '/refunds', { body: { payment_intent_id: pi } }));
    const done = await s.api('POST', `/class_sessions/${c.id}/cancellation`);
    expect(done.status).toBe(201);
    expect(done.body).toMatchObject({ seats_left: 0 });
    expect(done.body.cancelled_at).not.toBeNull();
    expect((await ok(s.api('GET', `/bookings/${seats[0].id}`), 200)).refund_ids).toEqual([counter.id]);
    expect(rows(s, 'SELECT count(*) AS n FROM refunds WHERE payment_intent_id = ?', pi)[0].n).toBe(1);
  });

  it('not_cancellable once started; money_movement_not_enabled when the account cannot move money', async () => {
    const c = await session('2026-03-07T12:00:00Z');
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    accounts.updateSettings(s.installation.sandbox_id, { money_movement_enabled: false });
    const denied = await s.api('POST', `/class_sessions/${c.id}/cancellation`);
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('money_movement_not_enabled');
    expect((await ok(s.api('GET', `/class_sessions/${c.id}`), 200)).cancelled_at).toBeNull();
    accounts.updateSettings(s.installation.sandbox_id, { money_movement_enabled: true });
    clock.set(Date.parse('2026-03-07T12:00:00Z'));
    const started = await s.api('POST', `/class_sessions/${c.id}/cancellation`);
    expect(started.body.code).toBe('not_cancellable');
    expect((await s.api('POST', '/bookings', { body: { class_session_id: c.id, customer: { email: 'late@example.com' } } })).body.code).toBe(
      'slot_unavailable',
    );
  });
});
