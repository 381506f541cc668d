import type { AppContext } from '../../context.js';
import { ApiError } from '../../errors.js';
import { isoTime } from '../../clock.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { bookingsStoreOf } from './deps.js';
import { nextState } from '../../lifecycle.js';
import { bookingMachine, holdsSlot, type BookingEvent } from './machine.js';
import type { BookingRow } from './store.js';
import { bookingRecord } from './records.js';
import { publishBooking } from './feed-apply.js';

/** The error a refused trigger answers with: the spec names two, the rest share one code. */
function refused(row: BookingRow, event: BookingEvent['type']): ApiError {
  if (event === 'CANCEL') return new ApiError('not_holding', { message: `The booking is ${row.status}; it no longer holds its slot.` });
  if (event === 'DECLINE') return new ApiError('not_pending', { message: `The booking is ${row.status}, not pending.` });
  return new ApiError('booking_state_invalid', { message: `A ${row.status} booking cannot take ${event.toLowerCase()}.`, extra: { status: row.status } });
}

/**
 * Moves a booking through the machine and writes it, inside the caller's transaction: the new
 * state, the slot freed when the booking stops holding it, and the sync record central learns the
 * move from. `patch` carries the fields the move sets (who cancelled, when accepted, ...).
 */
export function applyEvent(ctx: AppContext, row: BookingRow, event: BookingEvent['type'], patch: Partial<BookingRow> = {}): BookingRow {
  if (!ctx.db.inTransaction) throw new Error('applyEvent() outside a transaction');
  const to = nextState(bookingMachine, row.status, { type: event });
  if (!to) throw refused(row, event);
  const next: BookingRow = { ...row, ...patch, status: to, updated_at: isoTime(ctx.clock.now()) };
  const store = bookingsStoreOf(ctx);
  store.update(next);
  if (!holdsSlot(to) && to !== 'completed' && to !== 'no_show') store.release(row.id);
  recordSync(ctx, next, event.toLowerCase());
  return next;
}

/** Writes a booking's non-lifecycle change (payment amounts, guests, links) with its sync record. */
export function saveBooking(ctx: AppContext, row: BookingRow, op: string): BookingRow {
  if (!ctx.db.inTransaction) throw new Error('saveBooking() outside a transaction');
  const next = { ...row, updated_at: isoTime(ctx.clock.now()) };
  bookingsStoreOf(ctx).update(next);
  recordSync(ctx, next, op);
  return next;
}

/** Central learns each booking fact made at this box (the sync area pushes it; we only append). */
export function recordSync(ctx: AppContext, row: BookingRow, op: string): void {
  appendSyncRecord(ctx.db, {
    kind: 'booking',
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    payload: bookingRecord(ctx, row, op) as unknown as Record<string, unknown>,
    createdAt: isoTime(ctx.clock.now()),
  });
  publishBooking(ctx, row);
}
