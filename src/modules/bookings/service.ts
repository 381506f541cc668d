import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import { tx } from '../../db/database.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { bookingsStoreOf, depsOf } from './deps.js';
import { applyEvent, saveBooking } from './lifecycle.js';
import { openCheckout, refreshPayment, refundPayments } from './payments.js';
import type { BookingFilter, BookingRow, TabRow } from './store.js';
import type { Stay } from './schema.js';
import { initialState, nextState } from '../../lifecycle.js';
import { serviceTabMachine } from './tab-machine.js';

export { createBooking, createBookingGrouped, createSeries, rescheduleBooking } from './create.js';

/** Whether the account takes bookings: on unless the account setting `bookings_enabled` is false. */
export function bookingsEnabled(account: Account): boolean {
  return account.settings.bookings_enabled !== false;
}

export function requireBookingsEnabled(account: Account): void {
  if (!bookingsEnabled(account)) throw new ApiError('bookings_not_enabled');
}

/** A booking of the account (404 for another account's or environment's), with its payments learnt. */
export function getBooking(ctx: AppContext, account: Account, id: string): BookingRow {
  const row = bookingsStoreOf(ctx).get(id);
  if (!row || row.account_id !== account.id || (row.live_mode === 1) !== account.live_mode) throw notFound('booking', id);
  return refreshPayment(ctx, account, row);
}

/** Whether a booking id names a booking of this account and environment (an id in another module's body). */
export function hasBooking(ctx: AppContext, account: Account, id: string): boolean {
  const row = bookingsStoreOf(ctx).get(id);
  return !!row && row.account_id === account.id && (row.live_mode === 1) === account.live_mode;
}

/** The account a booking belongs to, whoever asks (the caller checks it may read that account). */
export function bookingAccountId(ctx: AppContext, id: string): string | undefined {
  return bookingsStoreOf(ctx).get(id)?.account_id;
}

export function listBookings(ctx: AppContext, f: BookingFilter, limit: number, offset: number) {
  return bookingsStoreOf(ctx).list(f, limit, offset);
}

/** Spec 3.1: the business may always cancel a booking still holding its slot; nothing is refunded. */
export function cancelBooking(ctx: AppContext, account: Account, id: string, reason: string | undefined): BookingRow {
  const row = getBooking(ctx, account, id);
  return tx(ctx.db, () =>
    applyEvent(ctx, bookingsStoreOf(ctx).get(row.id)!, 'CANCEL', { cancelled_by: 'merchant', cancellation_reason: reason ?? null, hold_expires_at: null }),
  );
}

/**
 * Spec 3.1: a pending booking turned down by the business. The slot is freed at once; what the
 * customer already paid is refunded after (a refund that fails leaves the booking declined with
 * `refund_due` and is retried by calling again).
 */
export async function declineBooking(ctx: AppContext, account: Account, id: string): Promise<BookingRow> {
  let row = getBooking(ctx, account, id);
  if (!(row.status === 'cancelled' && row.refund_due === 1 && row.cancellation_reason === 'declined')) {
    row = tx(ctx.db, () =>
      applyEvent(ctx, bookingsStoreOf(ctx).get(row.id)!, 'DECLINE', {
        cancelled_by: 'merchant',
        cancellation_reason: 'declined',
        hold_expires_at: null,
        refund_due: row.paid_in_cents > 0 ? 1 : 0,
        refund_reason: row.paid_in_cents > 0 ? 'declined' : null,
      }),
    );
  }
  if (row.refund_due === 1) {
    try {
      row = await refundPayments(ctx, account, row);
    } catch (err) {
      ctx.log.warn({ err, booking_id: row.id }, 'declination refund failed');
      throw new ApiError('refund_failed', { extra: { booking_id: row.id } });
    }
  }
  return row;
}

export function acceptBooking(ctx: AppContext, account: Account, id: string): BookingRow {
  const row = getBooking(ctx, account, id);
  if (row.status === 'pending' && row.paid_in_cents < row.due_in_cents) {
    throw new ApiError('booking_state_invalid', { message: 'The booking waits for its payment; it is confirmed once the checkout is paid.' });
  }
  return tx(ctx.db, () => applyEvent(ctx, bookingsStoreOf(ctx).get(row.id)!, 'ACCEPT', { accepted_at: isoTime(ctx.clock.now()), requires_acceptance: 0 }));
}

/** Check-in; a stay opens its service tab here (consumption during the stay is charged on it). */
export function checkInBooking(ctx: AppContext, account: Account, id: string): BookingRow {
  const row = getBooking(ctx, account, id);
  return tx(ctx.db, () => {
    let next = applyEvent(ctx, bookingsStoreOf(ctx).get(row.id)!, 'CHECK_IN');
    if (next.kind === 'stay') {
      const stay: Stay = JSON.parse(next.stay!);
      const tab: TabRow = {
        id: newId('tab'),
        account_id: next.account_id,
        live_mode: next.live_mode,
        booking_id: next.id,
        status: initialState(serviceTabMachine),
        items: '[]',
        checkout_id: null,
        checkout_url: null,
        created_at: isoTime(ctx.clock.now()),
        closed_at: null,
      };
      bookingsStoreOf(ctx).insertTab(tab);
      next = saveBooking(ctx, { ...next, stay: JSON.stringify({ ...stay, service_tab_id: tab.id }) }, 'tab_opened');
    }
    return next;
  });
}

export function completeBooking(ctx: AppContext, account: Account, id: string): BookingRow {
  const row = getBooking(ctx, account, id);
  return tx(ctx.db, () => applyEvent(ctx, bookingsStoreOf(ctx).get(row.id)!, 'COMPLETE'));
}

export function noShowBooking(ctx: AppContext, account: Account, id: string): BookingRow {
  const row = getBooking(ctx, account, id);
  if (Date.parse(row.starts_at) > ctx.clock.now()) {
    throw new ApiError('booking_state_invalid', { message: 'A customer can only miss a booking once it has started.' });
  }
  return tx(ctx.db, () => applyEvent(ctx, bookingsStoreOf(ctx).get(row.id)!, 'NO_SHOW'));
}

/**
 * `POST /bookings/{id}/balance_charge`: a checkout for what is still owed, its link in
 * `balance_checkout_url`. Asking again while that checkout is unpaid returns the same link.
 */
export function chargeBalance(ctx: AppContext, account: Account, id: string): BookingRow {
  const row = getBooking(ctx, account, id);
  if (row.status === 'cancelled') throw new ApiError('booking_state_invalid', { message: 'A cancelled booking has no balance to charge.' });
  if (row.status === 'pending') throw new ApiError('booking_state_invalid', { message: 'The booking is still pending its first payment.' });
  if (row.balance_in_cents <= 0) throw new ApiError('no_balance');
  if (row.balance_checkout_id) return row;
  return tx(ctx.db, () => {
    const cur = bookingsStoreOf(ctx).get(row.id)!;
    const checkout = openCheckout(ctx, account, cur, cur.balance_in_cents, 'balance');
    return saveBooking(ctx, { ...cur, balance_checkout_id: checkout.id, balance_checkout_url: checkout.url }, 'balance_charge');
  });
}

/** The business collected the balance itself (cash at the desk, another terminal): nothing is left to charge here. */
export function markBalancePaidOutside(ctx: AppContext, account: Account, id: string): BookingRow {
  const row = getBooking(ctx, account, id);
  if (row.status === 'cancelled' || row.status === 'pending')
    throw new ApiError('booking_state_invalid', { message: `A ${row.status} booking has no balance to collect.` });
  if (row.balance_in_cents <= 0) throw new ApiError('no_balance');
  return tx(ctx.db, () =>
    saveBooking(ctx, { ...bookingsStoreOf(ctx).get(row.id)!, balance_in_cents: 0, balance_paid_outside_at: isoTime(ctx.clock.now()) }, 'balance_paid_outside'),
  );
}

/** Guest registry of a stay: the guests are appended, up to the stay's number of guests. */
export function registerGuests(
  ctx: AppContext,
  account: Account,
  id: string,
  guests: Array<{ name: string; document: string; nationality: string }>,
): BookingRow {
  const row = getBooking(ctx, account, id);
  if (row.kind !== 'stay') throw new ApiError('booking_state_invalid', { message: 'Only a stay has a guest registry.' });
  if (row.status === 'cancelled' || row.status === 'no_show') throw new ApiError('booking_state_invalid', { message: `The stay is ${row.status}.` });
  return tx(ctx.db, () => {
    const cur = bookingsStoreOf(ctx).get(row.id)!;
    const stay: Stay = JSON.parse(cur.stay!);
    const all = [...stay.registered_guests, ...guests];
    if (all.length > stay.guests) throw invalid({ guests: `the stay is for ${stay.guests} guest(s); ${stay.registered_guests.length} already registered` });
    const next: Stay = { ...stay, registered_guests: all, guests_registered_at: isoTime(ctx.clock.now()) };
    return saveBooking(ctx, { ...cur, stay: JSON.stringify(next) }, 'guests_registered');
  });
}

export function tabOf(ctx: AppContext, account: Account, id: string): TabRow {
  const tab = bookingsStoreOf(ctx).tab(id);
  if (!tab || tab.account_id !== account.id || (tab.live_mode === 1) !== account.live_mode) throw notFound('service tab', id);
  return tab;
}

export function addTabItem(ctx: AppContext, account: Account, id: string, item: { name: string; amount_in_cents: number; quantity?: number }): TabRow {
  return tx(ctx.db, () => {
    const tab = tabOf(ctx, account, id);
    if (!nextState(serviceTabMachine, tab.status, { type: 'ADD_ITEM' })) throw new ApiError('booking_state_invalid', { message: 'The service tab is closed.' });
    const next = {
      ...tab,
      items: JSON.stringify([...JSON.parse(tab.items), { name: item.name, amount_in_cents: item.amount_in_cents, quantity: item.quantity ?? 1 }]),
    };
    bookingsStoreOf(ctx).updateTab(next);
    return next;
  });
}

/** Closes the tab into one checkout of everything consumed (none when the tab is empty). */
export function closeTab(ctx: AppContext, account: Account, id: string): TabRow {
  return tx(ctx.db, () => {
    const tab = tabOf(ctx, account, id);
    const closed = nextState(serviceTabMachine, tab.status, { type: 'CLOSE' });
    // Closing a closed tab answers it as it is: a till that retries must not open a second checkout.
    if (!closed) return tab;
    const booking = bookingsStoreOf(ctx).get(tab.booking_id)!;
    const items: Array<{ name: string; amount_in_cents: number; quantity: number }> = JSON.parse(tab.items);
    let checkout: { id: string; url: string | null } | null = null;
    if (items.length) {
      checkout = depsOf(ctx).money.createCheckout(ctx, account, {
        items: items.map((i) => ({ ...i, currency: booking.currency })),
        currency: booking.currency,
        customer_id: booking.customer_id,
        metadata: { booking_id: booking.id, service_tab_id: tab.id, purpose: 'service_tab' },
        expires_at: null,
      });
    }
    const next: TabRow = {
      ...tab,
      status: closed,
      checkout_id: checkout?.id ?? null,
      checkout_url: checkout?.url ?? null,
      closed_at: isoTime(ctx.clock.now()),
    };
    bookingsStoreOf(ctx).updateTab(next);
    return next;
  });
}

export function tabView(ctx: AppContext, tab: TabRow) {
  const items: Array<{ name: string; amount_in_cents: number; quantity: number }> = JSON.parse(tab.items);
  const booking = bookingsStoreOf(ctx).get(tab.booking_id)!;
  return {
    id: tab.id,
    booking_id: tab.booking_id,
    status: tab.status,
    items,
    total_in_cents: items.reduce((s, i) => s + i.amount_in_cents * i.quantity, 0),
    currency: booking.currency,
    checkout_id: tab.checkout_id,
    checkout_url: tab.checkout_url,
    created_at: tab.created_at,
    closed_at: tab.closed_at,
  };
}

/** A unit's held nights from `fromOn` on (stays still holding, and those completed): its public calendar. */
export function unitNights(ctx: AppContext, resourceId: string, fromOn: string) {
  return bookingsStoreOf(ctx).nightsOf(resourceId, fromOn);
}
