import type { AppContext } from '../../../context.js';
import type { Account } from '../../../accounts/service.js';
import { tx } from '../../../db/database.js';
import { ApiError } from '../../../errors.js';
import { isoTime } from '../../../clock.js';
import { bookingsStoreOf } from '../deps.js';
import { applyEvent } from '../lifecycle.js';
import { holdsSlot } from '../machine.js';
import { refreshPayment, refundPayments } from '../payments.js';
import { nextState } from '../../../lifecycle.js';
import { classSessionMachine, sessionState } from './machine.js';
import { classSessionRow, classSessionView, publishClassSession, storeOf } from './service.js';
import type { ClassSessionView } from './schema.js';

/** Who may move money (spec 4.6): an account setting, on unless `money_movement_enabled` is false. */
export function canMoveMoney(account: Account): boolean {
  return account.settings.money_movement_enabled !== false;
}

/**
 * Spec 3.4 and 4.6. The first call, in one transaction: the session is cancelled, its instructor
 * and room are freed, and every seat still holding is cancelled as the business and marked as owed
 * a refund. Then each owed seat is refunded, each refund recorded as it succeeds. Seats whose
 * refund failed stay owed: the answer is 422 `seats_left` naming them, and a later call (on a
 * cancelled session, which is otherwise `not_cancellable`) refunds only those.
 */
export async function cancelClassSession(ctx: AppContext, account: Account, id: string): Promise<ClassSessionView> {
  if (!canMoveMoney(account)) throw new ApiError('money_movement_not_enabled');
  // Two calls for one session run one after the other: a refund awaited by the first must be
  // recorded before the second looks at which seats are still owed one.
  const previous = running.get(id) ?? Promise.resolve();
  const mine = previous.catch(() => undefined).then(() => cancelNow(ctx, account, id));
  running.set(id, mine);
  try {
    return await mine;
  } finally {
    if (running.get(id) === mine) running.delete(id);
  }
}

const running = new Map<string, Promise<ClassSessionView>>();

async function cancelNow(ctx: AppContext, account: Account, id: string): Promise<ClassSessionView> {
  const bookings = bookingsStoreOf(ctx);
  let session = classSessionRow(ctx, account, id);
  if (!nextState(classSessionMachine, sessionState(session.cancelled_at), { type: 'CANCEL' })) {
    // A cancelled session takes the call again only to finish the refunds still owed (spec 4.6).
    if (bookings.refundsDue(session.id).length === 0) throw new ApiError('not_cancellable', { message: 'The class session is already cancelled.' });
  } else {
    if (Date.parse(session.starts_at) <= ctx.clock.now()) throw new ApiError('not_cancellable', { message: 'The class session has already started.' });
    // Payments made up to now must be known before deciding who is owed a refund.
    for (const seat of bookings.sessionSeats(session.id)) if (seat.status === 'pending' && seat.checkout_id) refreshPayment(ctx, account, seat);
    tx(ctx.db, () => {
      const at = isoTime(ctx.clock.now());
      if (!storeOf(ctx).cancel(session.id, at)) return;
      bookings.release(session.id);
      publishClassSession(ctx, session.id);
      for (const seat of bookings.sessionSeats(session.id)) {
        if (!holdsSlot(seat.status)) continue;
        applyEvent(ctx, seat, 'CANCEL', {
          cancelled_by: 'merchant',
          cancellation_reason: 'class_session_cancelled',
          hold_expires_at: null,
          refund_due: seat.paid_in_cents > 0 ? 1 : 0,
          refund_reason: seat.paid_in_cents > 0 ? 'class_session_cancelled' : null,
        });
      }
    });
    session = classSessionRow(ctx, account, id);
  }
  const failed: string[] = [];
  for (const seat of bookings.refundsDue(session.id)) {
    try {
      await refundPayments(ctx, account, seat);
    } catch (err) {
      ctx.log.warn({ err, booking_id: seat.id }, 'class seat refund failed');
      failed.push(seat.id);
    }
  }
  if (failed.length)
    throw new ApiError('seats_left', { message: `${failed.length} seat(s) could not be refunded; call again to finish them.`, extra: { booking_ids: failed } });
  return classSessionView(ctx, session);
}
