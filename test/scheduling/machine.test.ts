import { describe, expect, it, vi } from 'vitest';
import { nextState } from '../../src/lifecycle.js';
import { bookingMachine, holdsSlot, type BookingStatus, type BookingEvent } from '../../src/modules/bookings/machine.js';
import { startTestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { customer, ok, salon } from './helpers.js';

const STATES: BookingStatus[] = ['pending', 'confirmed', 'checked_in', 'completed', 'cancelled', 'no_show'];
const EVENTS: BookingEvent['type'][] = ['PAID', 'ACCEPT', 'DECLINE', 'CANCEL', 'EXPIRE', 'RESCHEDULE', 'CHECK_IN', 'COMPLETE', 'NO_SHOW'];

describe('the booking machine', () => {
  it('allows exactly the moves of docs/scheduling.md', () => {
    const table: Record<string, string> = {};
    for (const s of STATES)
      for (const e of EVENTS) {
        const to = nextState(bookingMachine, s, { type: e });
        if (to) table[`${s} ${e}`] = to;
      }
    expect(table).toEqual({
      'pending PAID': 'confirmed',
      'pending ACCEPT': 'confirmed',
      'pending DECLINE': 'cancelled',
      'pending CANCEL': 'cancelled',
      'pending EXPIRE': 'cancelled',
      'pending RESCHEDULE': 'cancelled',
      'confirmed PAID': 'confirmed',
      'confirmed CANCEL': 'cancelled',
      'confirmed RESCHEDULE': 'cancelled',
      'confirmed CHECK_IN': 'checked_in',
      'confirmed COMPLETE': 'completed',
      'confirmed NO_SHOW': 'no_show',
      'checked_in PAID': 'checked_in',
      'checked_in CANCEL': 'cancelled',
      'checked_in COMPLETE': 'completed',
    });
  });

  it('only pending, confirmed and checked_in hold their slot (spec 3.1 not_holding)', () => {
    expect(STATES.filter(holdsSlot)).toEqual(['pending', 'confirmed', 'checked_in']);
  });
});

describe('the booking-holds worker', () => {
  it('releases an expired hold on its own, judging time by the injected clock', async () => {
    const clock = new ManualClock(Date.parse('2026-03-02T08:00:00.000Z'));
    const s = await startTestServer({ clock, config: { scheduling: { sweep_interval_ms: 100 } } });
    try {
      const cat = await salon(s);
      const b = await ok(
        s.api('POST', '/bookings', { body: { service_id: cat.colour.id, starts_at: '2026-03-05T15:00:00Z', staff_member_id: cat.stylist.id, customer } }),
      );
      const status = async () => ((await s.daemon.ctx.db.prepare('SELECT status FROM sched_bookings WHERE id = ?').get(b.id)) as { status: string }).status;
      expect(await status()).toBe('pending');
      clock.advance(31 * 60_000);
      await vi.waitFor(async () => expect(await status()).toBe('cancelled'), { timeout: 10_000, interval: 50 });
    } finally {
      await s.stop();
    }
  });
});
