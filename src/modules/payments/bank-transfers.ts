import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { ApiError, notFound } from '../../errors.js';
import type { Account } from '../../accounts/service.js';
import { getCheckout, isExpired } from '../checkouts/service.js';
import type { Checkout } from '../checkouts/schema.js';
import { emitAutomatedTransferReceived, resultOf, type SettleResult } from './records.js';
import { finishPendingPayment, pendingPaymentOf, startPendingPayment } from './pending.js';
import { paymentsStore, type PaymentIntentRow } from './store.js';

/**
 * Bank transfers that wait for the money (docs/events.md, "Pending bank transfers"). The buyer
 * chooses to pay by transfer: the checkout turns `payment_in_progress`, a `pending` payment intent
 * and its intent are recorded and `intent.pending` (and `bank_transfer_intent.pending`) emitted.
 * The bank's notice of the money arriving settles it (`recordBankTransferArrival`, also behind the
 * sandbox helper); the payer giving up cancels it. Nothing is pushed to the central while it waits:
 * its outcome travels as one `checkout_payment` record, like any other payment's (pending.ts).
 */

/** Why a transfer that arrived short failed (`details.failure_reason`, the legacy `failure_reason`). */
export const AMOUNT_SHORT = 'amount_short';

/**
 * Starts a bank-transfer payment of a checkout: the checkout waits for the money. Asking again while
 * it waits answers the same pending payment.
 */
export function startBankTransfer(
  ctx: AppContext,
  account: Account,
  checkoutId: string,
  opts: { channel: string },
): { checkout: Checkout; payment: PaymentIntentRow } {
  return startWaitingPayment(ctx, account, checkoutId, 'bank_transfer', opts);
}

/**
 * A payment that waits for money sent outside posd: a bank transfer (`awaiting_funds`) or a crypto
 * payment waiting for its on-chain confirmation (`awaiting_confirmation`, src/modules/payments/crypto.ts).
 */
export function startWaitingPayment(
  ctx: AppContext,
  account: Account,
  checkoutId: string,
  method: 'bank_transfer' | 'crypto',
  opts: { channel: string },
): { checkout: Checkout; payment: PaymentIntentRow } {
  return tx(ctx.db, () => {
    const checkout = getCheckout(ctx, account, checkoutId);
    if (!checkout) throw notFound('checkout', checkoutId);
    const waiting = pendingPaymentOf(ctx, checkout);
    if (waiting?.method === method) return { checkout, payment: waiting };
    // The payer chose another way to send the money: the one they announced first is canceled.
    if (waiting) finishPendingPayment(ctx, account, waiting, { type: 'CANCEL' });
    if (isExpired(ctx, checkout)) throw new ApiError('checkout_expired');
    // What refuses a payment (an unsigned contract) refuses it before the buyer sends any money.
    ctx.registry.checkout.beforePay(ctx, checkout.id);
    // Read again: canceling the other waiting payment moved the checkout.
    const current = getCheckout(ctx, account, checkout.id)!;
    return startPendingPayment(ctx, account, current, {
      method,
      channel: opts.channel,
      rawStatus: method === 'crypto' ? 'awaiting_confirmation' : 'awaiting_funds',
    });
  });
}

export interface BankTransferArrival {
  amountInCents: number;
  bankReference?: string | null;
  senderComment?: string | null;
  /**
   * The bank's automated notice matched it to its checkout by the payer's reference (not recorded
   * by hand): also `automated_bank_transfer_intent.succeeded` when it settles the payment.
   */
  automated?: boolean;
}

/**
 * The bank's notice that money arrived for a pending transfer: the code a real bank notice goes
 * through (and the sandbox helper). All of it (or more: the bank returns the excess, posd records the
 * checkout's amount) settles the payment; less fails it (`amount_short`; the bank returns it). A
 * notice about a payment that no longer waits changes nothing and answers its outcome.
 */
export function recordBankTransferArrival(ctx: AppContext, account: Account, paymentIntentId: string, arrival: BankTransferArrival): SettleResult {
  return tx(ctx.db, () => {
    const pa = paymentsStore(ctx.db).byId(paymentIntentId);
    if (!pa || pa.account_id !== account.id || pa.method !== 'bank_transfer') throw notFound('payment intent', paymentIntentId);
    if (pa.status !== 'pending') return resultOf(pa);
    const short = arrival.amountInCents < pa.amount_in_cents;
    const done = finishPendingPayment(ctx, account, pa, short ? { type: 'FAIL' } : { type: 'SUCCEED' }, {
      failureReason: short ? AMOUNT_SHORT : null,
      processorReference: arrival.bankReference ?? `SANDBOX-${pa.id.slice(3, 15).toUpperCase()}`,
      senderComment: arrival.senderComment ?? null,
    });
    if (arrival.automated && done.status === 'succeeded') emitAutomatedTransferReceived(ctx, account, done, getCheckout(ctx, account, done.checkout_id)!);
    return resultOf(done);
  });
}
