import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import type { Account } from '../../accounts/service.js';
import { paymentIntentRow } from '../payments/service.js';
import { disputeOfPayment } from '../disputes/service.js';
import { refundsStore } from './store.js';
import { intentRow } from '../intents/service.js';
import { newRefundRow, refundMoneyBack, refundView, type RefundAnswer } from './money-back.js';
import { nexoPaymentOf, queueTerminalRefund, retryTerminalRefund, terminalRefundFailure } from './terminal.js';

export type { Refund, RefundView } from './views.js';
export type { RefundAnswer } from './money-back.js';
export { applyTerminalRefund, openTerminalRefunds, terminalRefundInFlight, type OpenTerminalRefund, type TerminalRefundNews } from './terminal.js';

/**
 * The payment intent a refund names: `payment_intent_id` (hosted), or `intent_id` holding the
 * unified `in_` id of the payment (its `legacy_id` is the payment intent) or a `pa_` id. Both sent
 * must name the same payment. Unknown ids are left to the refund's own 404.
 */
export function refundTarget(ctx: AppContext, paymentIntentId: string | undefined, intentId: string | undefined): string {
  const fromIntent = intentId?.startsWith('in_') ? (intentRow(ctx, intentId)?.legacy_id ?? intentId) : intentId;
  if (!paymentIntentId && !fromIntent) throw invalid({ payment_intent_id: 'name the payment: payment_intent_id (pa_) or intent_id (in_)' });
  if (paymentIntentId && fromIntent && paymentIntentId !== fromIntent) throw invalid({ intent_id: 'names another payment than payment_intent_id' });
  // An id of another account is answered like an unknown one, by the refund's own lookup.
  return (paymentIntentId ?? fromIntent)!;
}

/**
 * Refunds a succeeded payment intent, always in full (gaps.md); the money side is refundMoneyBack
 * (money-back.ts). A second refund answers 422 `already_refunded` with the first one's id; the
 * UNIQUE on payment_intent_id is the last guard against two concurrent ones. A payment a nexo
 * terminal took is refunded by that terminal (terminal.ts): the refund answers `pending` and follows
 * the terminal's answer; one that failed there may be asked for again, which asks the terminal again.
 */
export function refundPaymentIntent(
  ctx: AppContext,
  account: Account,
  paymentIntentId: string,
  opts: { reason?: string; amountInCents?: number } = {},
): RefundAnswer {
  return tx(ctx.db, () => {
    const pa = paymentIntentRow(ctx, [account.id], account.live_mode, paymentIntentId);
    if (!pa) throw notFound('payment intent', paymentIntentId);
    // Never less than asked silently, never more: an amount other than the whole payment is refused.
    if (opts.amountInCents !== undefined && opts.amountInCents !== pa.amount_in_cents) {
      throw new ApiError('partial_refund_unsupported', { errors: { amount_in_cents: [`must be ${pa.amount_in_cents}, the whole payment`] } });
    }
    const store = refundsStore(ctx.db);
    const existing = store.byPaymentIntent(pa.id);
    if (existing) {
      const again = retryTerminalRefund(ctx, existing, pa);
      if (again) return again;
      throw new ApiError('already_refunded', { extra: { refund_id: existing.id } });
    }
    if (pa.status !== 'succeeded') throw new ApiError('payment_not_succeeded');
    // A chargeback already takes the money back: refunding too would pay the customer twice.
    const dispute = disputeOfPayment(ctx, pa.id);
    if (dispute) throw new ApiError('payment_disputed', { message: `The payment intent is disputed by ${dispute.id} (${dispute.status}).` });

    const terminal = nexoPaymentOf(ctx, pa);
    if (terminal) return queueTerminalRefund(ctx, account, pa, terminal, opts.reason ?? null);
    const row = newRefundRow(ctx, account, pa, 'succeeded', opts.reason ?? null);
    return refundMoneyBack(ctx, { accountId: account.id, liveMode: account.live_mode, accountName: account.name }, pa, row, true);
  });
}

export function getRefund(ctx: AppContext, accountIds: string[], liveMode: boolean, id: string): RefundAnswer | undefined {
  const row = refundsStore(ctx.db).byId(id);
  if (!row || !accountIds.includes(row.account_id) || (row.live_mode === 1) !== liveMode) return undefined;
  const customerId = paymentIntentRow(ctx, [row.account_id], row.live_mode === 1, row.payment_intent_id)?.customer_id ?? null;
  return refundView(ctx, row, customerId, terminalRefundFailure(ctx, row.id));
}
