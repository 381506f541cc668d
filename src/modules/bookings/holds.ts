import type { AppContext } from '../../context.js';
import { groupCommit } from '../../db/group-commit.js';
import type { Worker } from '../../api/module.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import { bookingsStoreOf, depsOf } from './deps.js';
import { applyEvent } from './lifecycle.js';
import { refreshPayment, refundPayments } from './payments.js';

const IN_FLIGHT = new Set(['payment_in_progress', 'needs_verification', 'needs_payer_authentication']);

function accountOf(ctx: AppContext, id: string): Account | undefined {
  return accountsOf(ctx).account(id);
}

/**
 * Releases every unpaid hold whose time is up (`cancelled_by: system`). A hold whose checkout was
 * paid in the meantime is confirmed instead: the payment wins over the timer. Runs before each
 * availability check (so an expired hold never blocks a slot, whatever the worker's pace) and
 * from the worker.
 */
export function expireHolds(ctx: AppContext, limit = 100): number {
  const store = bookingsStoreOf(ctx);
  let released = 0;
  for (const row of store.expiredHolds(isoTime(ctx.clock.now()), limit)) {
    const account = accountOf(ctx, row.account_id);
    if (!account) continue;
    const after = row.checkout_id ? refreshPayment(ctx, account, row) : row;
    if (after.status !== 'pending' || after.hold_expires_at === null) continue;
    // A payment under way (a terminal authorizing, a 3-D Secure challenge) may still succeed:
    // releasing the slot now would sell it twice. The next sweep looks again.
    const checkout = after.checkout_id ? depsOf(ctx).money.getCheckout(ctx, account, after.checkout_id) : undefined;
    if (checkout && IN_FLIGHT.has(checkout.status)) continue;
    tx(ctx.db, () => applyEvent(ctx, after, 'EXPIRE', { cancelled_by: 'system', cancellation_reason: 'hold_expired', hold_expires_at: after.hold_expires_at }));
    released++;
  }
  return released;
}

/** Polls the checkouts of bookings still waiting for their payment, and of bookings cancelled with one open. */
export function pollPayments(ctx: AppContext, limit = 100): number {
  const store = bookingsStoreOf(ctx);
  let confirmed = 0;
  for (const row of store.awaitingPayment(limit)) {
    const account = accountOf(ctx, row.account_id);
    if (!account) continue;
    if (refreshPayment(ctx, account, row).status !== 'pending') confirmed++;
  }
  const since = isoTime(ctx.clock.now() - 8 * 86_400_000);
  for (const row of store.cancelledWithOpenCheckout(since, limit)) {
    const account = accountOf(ctx, row.account_id);
    if (account) refreshPayment(ctx, account, row);
  }
  return confirmed;
}

/** Refunds checkouts paid after their booking was cancelled; a failure is retried on the next sweep. */
export async function refundLatePayments(ctx: AppContext, limit = 50): Promise<number> {
  let refunded = 0;
  for (const row of bookingsStoreOf(ctx).latePaymentsToRefund(limit)) {
    const account = accountOf(ctx, row.account_id);
    if (!account) continue;
    try {
      await refundPayments(ctx, account, row);
      refunded++;
    } catch (err) {
      ctx.log.warn({ err, booking_id: row.id }, 'refund of a late booking payment failed; retrying on the next sweep');
    }
  }
  return refunded;
}

/** One sweep every `scheduling.sweep_interval_ms`: release expired holds, learn of paid checkouts. */
export function holdsWorker(ctx: AppContext): Worker {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  const sweep = () => {
    if (running) return;
    running = (async () => {
      // One job of the next group commit for the sweep's writes (each hold its own savepoint).
      await groupCommit(ctx.db, () => {
        pollPayments(ctx);
        expireHolds(ctx);
      });
      await refundLatePayments(ctx);
    })()
      .catch((err) => ctx.log.error({ err }, 'booking sweep failed'))
      .finally(() => (running = undefined));
  };
  return {
    name: 'booking-holds',
    start() {
      timer = setInterval(sweep, ctx.config.scheduling.sweep_interval_ms);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
