import { setup } from 'xstate';
import { nextState } from '../../lifecycle.js';

export type BookingStatus = 'pending' | 'confirmed' | 'checked_in' | 'completed' | 'cancelled' | 'no_show';

/**
 * Triggers of the booking lifecycle (spec 3.1 and the moves gaps.md adds):
 * - `PAID`: the checkout the policy asked for is paid; the slot now belongs to the customer.
 * - `ACCEPT`: the business accepts a pending booking it had to decide on (no payment due).
 * - `DECLINE`: the business turns down a pending booking (spec: `not_pending` otherwise).
 * - `CANCEL`: the business (or the class cancellation) frees a slot still held (spec: `not_holding` otherwise).
 * - `EXPIRE`: an unpaid hold ran out (`cancelled_by: system`).
 * - `RESCHEDULE`: the booking was moved; it ends cancelled and a new one records `rescheduled_from_id`.
 * - `CHECK_IN`, `COMPLETE`, `NO_SHOW`: the day itself.
 */
export type BookingEvent =
  | { type: 'PAID' }
  | { type: 'ACCEPT' }
  | { type: 'DECLINE' }
  | { type: 'CANCEL' }
  | { type: 'EXPIRE' }
  | { type: 'RESCHEDULE' }
  | { type: 'CHECK_IN' }
  | { type: 'COMPLETE' }
  | { type: 'NO_SHOW' };

/** The one place where booking transitions are written. */
export const bookingMachine = setup({
  types: { events: {} as BookingEvent },
}).createMachine({
  id: 'booking',
  initial: 'pending',
  states: {
    pending: {
      on: {
        PAID: 'confirmed',
        ACCEPT: 'confirmed',
        DECLINE: 'cancelled',
        CANCEL: 'cancelled',
        EXPIRE: 'cancelled',
        RESCHEDULE: 'cancelled',
      },
    },
    confirmed: {
      on: {
        // A payment that lands after the business accepted still counts; the state stays.
        PAID: 'confirmed',
        CANCEL: 'cancelled',
        RESCHEDULE: 'cancelled',
        CHECK_IN: 'checked_in',
        COMPLETE: 'completed',
        NO_SHOW: 'no_show',
      },
    },
    checked_in: {
      on: {
        PAID: 'checked_in',
        CANCEL: 'cancelled',
        COMPLETE: 'completed',
      },
    },
    completed: { type: 'final' },
    cancelled: { type: 'final' },
    no_show: { type: 'final' },
  },
});

/** States that still hold the slot (spec 3.1 "any state still holding the slot"). */
export function holdsSlot(status: BookingStatus): boolean {
  return nextState(bookingMachine, status, { type: 'CANCEL' }) !== null;
}
