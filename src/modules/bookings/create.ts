import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import { tx } from '../../db/database.js';
import { groupCommit } from '../../db/group-commit.js';
import { ApiError, invalid } from '../../errors.js';
import { isoTime } from '../../clock.js';
import { newId, randomToken } from '../../ids.js';
import { initialState } from '../../lifecycle.js';
import { bookingMachine } from './machine.js';
import { bookingsStoreOf, depsOf } from './deps.js';
import { recordSync, applyEvent } from './lifecycle.js';
import { amountDue, openCheckout } from './payments.js';
import { planBooking, type Plan, type Target } from './plan.js';
import { expireHolds } from './holds.js';
import type { BookingCreate, Reschedule, SeriesCreate } from './schema.js';
import type { BookingRow } from './store.js';

const MINUTE = 60_000;

interface Customer {
  id: string;
  name: string | null;
  email: string | null;
  phone: string | null;
}

function resolveCustomer(ctx: AppContext, account: Account, b: BookingCreate): Customer {
  const money = depsOf(ctx).money;
  if (b.customer_id) {
    const c = money.getCustomer(ctx, account, b.customer_id);
    if (!c) throw invalid({ customer_id: `no customer with id ${b.customer_id}` });
    return { id: c.id, name: c.full_name, email: c.email, phone: c.phone };
  }
  const input = b.customer ?? {};
  if (!input.email && !input.phone) throw invalid({ customer: 'send customer_id, or a customer with an email or a phone' });
  const c = money.findOrCreateCustomer(ctx, account, { email: input.email ?? null, name: input.name ?? null, phone: input.phone ?? null });
  return { id: c.id, name: c.full_name ?? input.name ?? null, email: c.email ?? input.email ?? null, phone: c.phone ?? input.phone ?? null };
}

/** Inserts a planned booking with its occupancy and, when the policy asks, its checkout. In the caller's transaction. */
function place(ctx: AppContext, account: Account, plan: Plan, customer: Customer, b: BookingCreate, extra: Partial<BookingRow> = {}): BookingRow {
  const now = ctx.clock.now();
  // A moved booking keeps what was agreed and paid (its policy, amounts and checkouts come in `extra`),
  // whatever the service says today.
  const moved = extra.rescheduled_from_id !== undefined;
  const policy = b.payment_policy ?? plan.service.payment_policy;
  if (!moved && policy === 'card_on_file' && !plan.service.protection_in_cents) {
    throw invalid({ payment_policy: 'card_on_file needs the service to have protection_in_cents' });
  }
  const due = amountDue(policy, plan.totalInCents, plan.service.deposit_in_cents, plan.service.protection_in_cents);
  const holdMinutes = plan.service.hold_minutes ?? ctx.config.scheduling.hold_minutes;
  const pendingPayment = due > 0;
  const requiresAcceptance = b.requires_acceptance === true;
  const row: BookingRow = {
    id: newId('bk'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    status: pendingPayment || requiresAcceptance ? initialState(bookingMachine) : 'confirmed',
    source: 'api',
    kind: plan.kind,
    service_id: plan.service.id,
    requires_acceptance: requiresAcceptance ? 1 : 0,
    starts_at: plan.startsAt,
    ends_at: plan.endsAt,
    customer_id: customer.id,
    customer_name: customer.name,
    customer_email: customer.email,
    customer_phone: customer.phone,
    segments: JSON.stringify(plan.segments),
    staff_member_id: plan.staffMemberId,
    resource_id: plan.resourceId,
    class_session_id: plan.classSessionId,
    stay: plan.stay ? JSON.stringify(plan.stay) : null,
    payment_policy: policy,
    currency: plan.currency,
    total_in_cents: plan.totalInCents,
    due_in_cents: due,
    paid_in_cents: 0,
    balance_in_cents: plan.totalInCents,
    balance_paid_outside_at: null,
    checkout_id: null,
    checkout_url: null,
    balance_checkout_id: null,
    balance_checkout_url: null,
    no_show_fee_checkout_id: null,
    booking_series_id: null,
    access_token: randomToken(32),
    customer_note: b.customer_note ?? null,
    merchant_note: b.merchant_note ?? null,
    accepted_at: pendingPayment || requiresAcceptance ? null : isoTime(now),
    hold_expires_at: pendingPayment ? isoTime(now + holdMinutes * MINUTE) : null,
    cancelled_by: null,
    cancellation_reason: null,
    rescheduled_from_id: null,
    payment_intent_ids: '[]',
    refund_due: 0,
    refund_reason: null,
    refunded_at: null,
    refund_ids: '[]',
    refunded_intent_ids: '[]',
    refund_error: null,
    metadata: JSON.stringify(b.metadata ?? {}),
    created_at: isoTime(now),
    updated_at: isoTime(now),
    origin_store_id: null,
    ...extra,
  };
  const store = bookingsStoreOf(ctx);
  store.insert(row);
  for (const o of plan.occupancy) store.occupy({ ownerId: row.id, accountId: account.id, liveMode: account.live_mode, ...o });
  if (pendingPayment && !moved) {
    const checkout = openCheckout(ctx, account, row, due, 'booking');
    row.checkout_id = checkout.id;
    row.checkout_url = checkout.url;
    store.update(row);
  }
  recordSync(ctx, row, 'create');
  return row;
}

/** The availability check and the inserts (and the checkout), in the caller's transaction. */
function book(ctx: AppContext, account: Account, b: BookingCreate): BookingRow {
  expireHolds(ctx);
  const plan = planBooking(ctx, account, b as Target);
  return place(ctx, account, plan, resolveCustomer(ctx, account, b), b);
}

/**
 * A booking in one IMMEDIATE transaction from the availability check to the insert (and the
 * checkout), so of many concurrent requests for one slot exactly one commits; the others see its
 * rows and answer `slot_unavailable`.
 */
export function createBooking(ctx: AppContext, account: Account, b: BookingCreate): BookingRow {
  return tx(ctx.db, () => book(ctx, account, b));
}

/**
 * `POST /bookings`: the same check and inserts, run in the database's next group commit
 * (`db/group-commit.ts`): bookings that arrive together share one IMMEDIATE transaction and one
 * flush, each in its own savepoint, checked and written one after the other, so a booking sees the
 * slots taken by those before it in the batch and two can still never hold one slot. One refused
 * rolls back alone. Resolves only once the commit is on disk. `inTransaction` runs last in the
 * booking's savepoint (the route stores its idempotent answer there).
 */
export function createBookingGrouped(ctx: AppContext, account: Account, b: BookingCreate, inTransaction?: (row: BookingRow) => void): Promise<BookingRow> {
  return groupCommit(ctx.db, () => {
    const row = book(ctx, account, b);
    inTransaction?.(row);
    return row;
  });
}

function addInterval(iso: string, frequency: 'daily' | 'weekly', steps: number): string {
  return isoTime(Date.parse(iso) + steps * (frequency === 'daily' ? 1 : 7) * 86_400_000);
}

function addDays(day: string, days: number): string {
  return isoTime(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).slice(0, 10);
}

/** A repeating booking: every occurrence or none (the first taken slot answers `slot_unavailable` naming it). */
export function createSeries(
  ctx: AppContext,
  account: Account,
  b: SeriesCreate,
): { id: string; frequency: string; interval: number; count: number; rows: BookingRow[] } {
  if (b.class_session_id) throw invalid({ class_session_id: 'a series repeats appointments or stays; book each class session' });
  const interval = b.repeat.interval ?? 1;
  return tx(ctx.db, () => {
    expireHolds(ctx);
    const id = newId('bks');
    bookingsStoreOf(ctx).insertSeries(id, account.id, account.live_mode, b.repeat.frequency, interval, b.repeat.count, isoTime(ctx.clock.now()));
    const customer = resolveCustomer(ctx, account, b);
    const rows: BookingRow[] = [];
    for (let i = 0; i < b.repeat.count; i++) {
      const step = i * interval;
      const days = step * (b.repeat.frequency === 'daily' ? 1 : 7);
      const target: Target = b.stay
        ? { stay: { ...b.stay, check_in_on: addDays(b.stay.check_in_on, days), check_out_on: addDays(b.stay.check_out_on, days) } }
        : {
            service_id: b.service_id,
            starts_at: b.starts_at && addInterval(b.starts_at, b.repeat.frequency, step),
            staff_member_id: b.staff_member_id,
            resource_id: b.resource_id,
          };
      let plan: Plan;
      try {
        plan = planBooking(ctx, account, target);
      } catch (err) {
        if (err instanceof ApiError && err.code === 'slot_unavailable') {
          throw new ApiError('slot_unavailable', { message: `Occurrence ${i + 1} of the series: ${err.message}`, extra: { occurrence: i + 1 } });
        }
        throw err;
      }
      rows.push(place(ctx, account, plan, customer, b, { booking_series_id: id }));
    }
    return { id, frequency: b.repeat.frequency, interval, count: b.repeat.count, rows };
  });
}

/**
 * Moves a booking: the old one ends `cancelled` (reason `rescheduled`) and frees its slot, a new one
 * takes the new slot with `rescheduled_from_id`, keeping the customer, policy, what was paid and the
 * checkout. One transaction: either the move happens whole or nothing changes.
 */
export function rescheduleBooking(ctx: AppContext, account: Account, old: BookingRow, r: Reschedule): BookingRow {
  return tx(ctx.db, () => {
    expireHolds(ctx);
    const cur = bookingsStoreOf(ctx).get(old.id)!;
    let target: Target;
    if (cur.kind === 'stay') {
      const stay = JSON.parse(cur.stay!);
      target = {
        stay: {
          room_type_id: stay.room_type_id,
          unit_id: r.unit_id === undefined ? stay.unit_id : r.unit_id,
          check_in_on: r.check_in_on ?? stay.check_in_on,
          check_out_on: r.check_out_on ?? stay.check_out_on,
          guests: stay.guests,
        },
      };
    } else if (cur.kind === 'class_seat') {
      if (!r.class_session_id) throw invalid({ class_session_id: 'is required to move a class seat' });
      target = { class_session_id: r.class_session_id };
    } else {
      target = {
        service_id: cur.service_id,
        starts_at: r.starts_at ?? cur.starts_at,
        staff_member_id: r.staff_member_id === undefined ? cur.staff_member_id : r.staff_member_id,
        resource_id: r.resource_id === undefined ? cur.resource_id : r.resource_id,
      };
    }
    // The checkouts move with the booking: the old one must not watch them any more (a payment
    // landing there later belongs to the new booking, not to a cancelled one).
    const moved = applyEvent(ctx, cur, 'RESCHEDULE', {
      cancelled_by: 'merchant',
      cancellation_reason: 'rescheduled',
      hold_expires_at: null,
      checkout_id: null,
      checkout_url: null,
      balance_checkout_id: null,
      balance_checkout_url: null,
    });
    const plan = planBooking(ctx, account, target, cur.id);
    if (plan.classSessionId && plan.service.id !== cur.service_id) throw invalid({ class_session_id: 'must be a session of the same class' });
    if (plan.kind === 'stay' && plan.totalInCents !== cur.total_in_cents) {
      // A stay of another length costs another amount: that is a new booking, not a move.
      throw invalid({ check_out_on: 'a moved stay keeps its number of nights' });
    }
    const customer = { id: cur.customer_id, name: cur.customer_name, email: cur.customer_email, phone: cur.customer_phone };
    const carried: Partial<BookingRow> = {
      status: cur.status,
      payment_policy: cur.payment_policy,
      total_in_cents: cur.total_in_cents,
      due_in_cents: cur.due_in_cents,
      paid_in_cents: cur.paid_in_cents,
      balance_in_cents: cur.balance_in_cents,
      balance_paid_outside_at: cur.balance_paid_outside_at,
      checkout_id: cur.checkout_id,
      checkout_url: cur.checkout_url,
      balance_checkout_id: cur.balance_checkout_id,
      balance_checkout_url: cur.balance_checkout_url,
      accepted_at: cur.accepted_at,
      hold_expires_at: cur.hold_expires_at,
      payment_intent_ids: cur.payment_intent_ids,
      requires_acceptance: cur.requires_acceptance,
      booking_series_id: cur.booking_series_id,
      rescheduled_from_id: moved.id,
      currency: cur.currency,
    };
    const b: BookingCreate = {
      customer_note: cur.customer_note,
      merchant_note: cur.merchant_note,
      metadata: JSON.parse(cur.metadata),
      payment_policy: cur.payment_policy,
    };
    return place(ctx, account, plan, customer, b, carried);
  });
}
