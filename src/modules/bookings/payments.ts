import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { serviceRow } from '../bookables/service.js';
import { bookingsStoreOf, depsOf } from './deps.js';
import { applyEvent, saveBooking } from './lifecycle.js';
import type { BookingRow } from './store.js';

/** What the policy asks the customer to pay before the slot is theirs (0: nothing). */
export function amountDue(policy: BookingRow['payment_policy'], total: number, deposit: number | null, protection: number | null): number {
  switch (policy) {
    case 'none':
      return 0;
    case 'full':
      return total;
    case 'deposit':
      return Math.min(deposit ?? total, total);
    case 'card_on_file':
      // No card data ever reaches this box (semi-integrated terminals), so "a card on file" is a
      // protection charge the customer pays through the checkout; it counts towards the total.
      return Math.min(protection ?? 0, total);
  }
}

function itemName(row: BookingRow, serviceName: string, purpose: string): string {
  const when = row.kind === 'stay' ? `${row.starts_at.slice(0, 10)} to ${row.ends_at.slice(0, 10)}` : row.starts_at;
  return `${purpose}: ${serviceName}, ${when}`.slice(0, 200);
}

/** Opens the checkout for what is due now; the caller's transaction commits it with the booking. */
export function openCheckout(
  ctx: AppContext,
  account: Account,
  row: BookingRow,
  amount: number,
  purpose: 'booking' | 'balance',
): { id: string; url: string | null } {
  const service = serviceRow(ctx, account, row.service_id);
  const checkout = depsOf(ctx).money.createCheckout(ctx, account, {
    items: [{ name: itemName(row, service.name, purpose === 'balance' ? 'Balance' : 'Booking'), amount_in_cents: amount, currency: row.currency, quantity: 1 }],
    currency: row.currency,
    customer_id: row.customer_id,
    metadata: { booking_id: row.id, purpose },
    expires_at: purpose === 'booking' ? row.hold_expires_at : null,
  });
  return { id: checkout.id, url: checkout.url };
}

/**
 * Learns whether the booking's checkouts were paid (polling the money area: checkouts announce
 * nothing to other modules) and moves the booking: a paid booking checkout confirms it, a paid
 * balance checkout clears the balance. Safe to call any number of times.
 */
export function refreshPayment(ctx: AppContext, account: Account, row: BookingRow): BookingRow {
  const money = depsOf(ctx).money;
  let cur = row;
  const booking = cur.checkout_id && cur.paid_in_cents < cur.due_in_cents ? money.getCheckout(ctx, account, cur.checkout_id) : undefined;
  const balance = cur.balance_checkout_id && cur.balance_in_cents > 0 ? money.getCheckout(ctx, account, cur.balance_checkout_id) : undefined;
  if (booking?.status === 'failed' || balance?.status === 'failed') {
    cur = renewFailedCheckouts(ctx, account, cur, booking?.status === 'failed', balance?.status === 'failed');
  }
  if (booking?.status !== 'paid' && balance?.status !== 'paid') return cur;
  return tx(ctx.db, () => {
    // Read again under the write lock: another request may have applied the same payment.
    cur = bookingsStoreOf(ctx).get(row.id)!;
    if (booking?.status === 'paid' && cur.paid_in_cents < cur.due_in_cents) {
      const paid = cur.paid_in_cents + cur.due_in_cents;
      const patch: Partial<BookingRow> = {
        paid_in_cents: paid,
        balance_in_cents: Math.max(0, cur.total_in_cents - paid),
        payment_intent_ids: JSON.stringify([...JSON.parse(cur.payment_intent_ids), ...booking.paymentIntentIds]),
        hold_expires_at: null,
      };
      if (cur.status === 'cancelled') {
        // Paid after the booking was cancelled (the checkout stays payable until it expires):
        // the money is owed back; the worker refunds it.
        cur = saveBooking(ctx, { ...cur, ...patch, balance_in_cents: cur.balance_in_cents, refund_due: 1, refund_reason: 'late_payment' }, 'late_payment');
      } else if (cur.status === 'pending' && cur.requires_acceptance === 0) {
        cur = applyEvent(ctx, cur, 'PAID', { ...patch, accepted_at: cur.accepted_at ?? isoTime(ctx.clock.now()) });
      } else {
        cur = saveBooking(ctx, { ...cur, ...patch }, 'paid');
      }
    }
    if (balance?.status === 'paid' && cur.balance_in_cents > 0) {
      cur = saveBooking(
        ctx,
        {
          ...cur,
          paid_in_cents: cur.total_in_cents,
          balance_in_cents: 0,
          payment_intent_ids: JSON.stringify([...JSON.parse(cur.payment_intent_ids), ...balance.paymentIntentIds]),
        },
        'balance_paid',
      );
    }
    return cur;
  });
}

/**
 * A failed payment ends its checkout for good (money area), so a booking still waiting for it gets
 * a fresh checkout for the same amount within the same hold, and the customer can try again at the
 * new `checkout_url` (its access page shows it). A failed balance checkout is replaced the same way.
 */
function renewFailedCheckouts(ctx: AppContext, account: Account, row: BookingRow, booking: boolean, balance: boolean): BookingRow {
  return tx(ctx.db, () => {
    let cur = bookingsStoreOf(ctx).get(row.id)!;
    const holdLeft = cur.hold_expires_at !== null && Date.parse(cur.hold_expires_at) > ctx.clock.now();
    if (booking && cur.checkout_id === row.checkout_id && cur.status === 'pending' && holdLeft) {
      const c = openCheckout(ctx, account, cur, cur.due_in_cents - cur.paid_in_cents, 'booking');
      cur = saveBooking(ctx, { ...cur, checkout_id: c.id, checkout_url: c.url }, 'checkout_renewed');
    }
    if (balance && cur.balance_checkout_id === row.balance_checkout_id && cur.balance_in_cents > 0 && cur.status !== 'cancelled') {
      const c = openCheckout(ctx, account, cur, cur.balance_in_cents, 'balance');
      cur = saveBooking(ctx, { ...cur, balance_checkout_id: c.id, balance_checkout_url: c.url }, 'balance_checkout_renewed');
    }
    return cur;
  });
}

/**
 * Refunds every payment of the booking, recording each refund in its own transaction right after
 * it succeeds, so a retry after a failure refunds only what is left and never a payment twice.
 * Throws the first failure after recording it on the booking (`refund_error`).
 */
export async function refundPayments(ctx: AppContext, account: Account, row: BookingRow): Promise<BookingRow> {
  const money = depsOf(ctx).money;
  const store = bookingsStoreOf(ctx);
  let cur = row;
  for (const pi of JSON.parse(row.payment_intent_ids) as string[]) {
    cur = store.get(row.id)!;
    const done: string[] = JSON.parse(cur.refunded_intent_ids);
    if (done.includes(pi)) continue;
    let refundId: string;
    try {
      refundId = (await money.refundPaymentIntent(ctx, account, pi)).id;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      tx(ctx.db, () => saveBooking(ctx, { ...store.get(row.id)!, refund_error: message }, 'refund_failed'));
      throw err;
    }
    cur = tx(ctx.db, () => {
      const fresh = store.get(row.id)!;
      const intents = JSON.stringify([...JSON.parse(fresh.refunded_intent_ids), pi]);
      return saveBooking(
        ctx,
        { ...fresh, refunded_intent_ids: intents, refund_ids: JSON.stringify([...JSON.parse(fresh.refund_ids), refundId]), refund_error: null },
        'refunded',
      );
    });
  }
  return tx(ctx.db, () => {
    const fresh = store.get(row.id)!;
    return saveBooking(ctx, { ...fresh, refund_due: 0, refunded_at: fresh.refunded_at ?? isoTime(ctx.clock.now()) }, 'refund_complete');
  });
}
