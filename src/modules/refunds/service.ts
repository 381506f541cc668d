import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import type { Account } from '../../accounts/service.js';
import { postBalanceTransaction } from '../ledger/service.js';
import { balancePaymentOf, paymentIntentRow } from '../payments/service.js';
import { disputeOfPayment } from '../disputes/service.js';
import { refundsStore, type RefundRow } from './store.js';
import { refundEventPayload, refundViewOf, toRefund, type RefundView } from './views.js';
import { customerById, customerView } from '../customers/service.js';
import { intentRow } from '../intents/service.js';

export type { Refund, RefundView } from './views.js';

/** The hosted answer of a refund: its row with the paying customer (and that customer's user). */
function refundView(ctx: AppContext, row: RefundRow, customerId: string | null): RefundView {
  const c = customerId ? customerById(ctx, customerId) : undefined;
  const view = c ? customerView(ctx, c) : undefined;
  return refundViewOf(row, {
    customer: view ? { id: view.id, email: view.email, full_name: view.full_name } : null,
    user_id: view?.user_id ?? null,
  });
}

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
 * Refunds a succeeded payment intent, always in full (gaps.md). The ledger `refund` row debits the
 * gross and, when `money.refund_returns_fee` (default), gives the fee back, so a refunded charge nets
 * to zero. The balance may go below zero: the money already left with the customer and the ledger
 * must say so. A second refund answers 422 `already_refunded` with the first one's id; the UNIQUE
 * on payment_intent_id is the last guard against two concurrent ones. A balance payment's amount
 * goes back to the payer's balance (a positive ledger `refund` row of the payer's, no fee).
 */
export function refundPaymentIntent(
  ctx: AppContext,
  account: Account,
  paymentIntentId: string,
  opts: { reason?: string; amountInCents?: number } = {},
): RefundView {
  return tx(ctx.db, () => {
    const pa = paymentIntentRow(ctx, [account.id], account.live_mode, paymentIntentId);
    if (!pa) throw notFound('payment intent', paymentIntentId);
    // Never less than asked silently, never more: an amount other than the whole payment is refused.
    if (opts.amountInCents !== undefined && opts.amountInCents !== pa.amount_in_cents) {
      throw new ApiError('partial_refund_unsupported', { errors: { amount_in_cents: [`must be ${pa.amount_in_cents}, the whole payment`] } });
    }
    const store = refundsStore(ctx.db);
    const existing = store.byPaymentIntent(pa.id);
    if (existing) throw new ApiError('already_refunded', { extra: { refund_id: existing.id } });
    if (pa.status !== 'succeeded') throw new ApiError('payment_not_succeeded');
    // A chargeback already takes the money back: refunding too would pay the customer twice.
    const dispute = disputeOfPayment(ctx, pa.id);
    if (dispute) throw new ApiError('payment_disputed', { message: `The payment intent is disputed by ${dispute.id} (${dispute.status}).` });

    const id = newId('re');
    const feeBack = ctx.config.money.refund_returns_fee ? -pa.fee_in_cents : 0;
    // A payment without a ledger row (cash) has nothing to reverse in the balance.
    const txn = pa.balance_transaction_id
      ? postBalanceTransaction(ctx, {
          accountId: account.id,
          liveMode: account.live_mode,
          type: 'refund',
          amountInCents: -pa.amount_in_cents,
          feeInCents: feeBack,
          feeDetails: feeBack ? { commission_in_cents: -pa.commission_in_cents, vat_withheld_in_cents: -pa.vat_withheld_in_cents } : undefined,
          currency: pa.currency,
          sourceId: id,
          sourceType: 'refund',
          description: opts.reason ?? null,
        })
      : undefined;
    // A balance payment's money came from another account: it goes back there (docs/events.md
    // "Balance payments"), in the same transaction as the merchant's debit.
    const payer = txn ? balancePaymentOf(ctx, pa.id) : undefined;
    const credit = payer
      ? postBalanceTransaction(ctx, {
          accountId: payer.payer_account_id,
          liveMode: account.live_mode,
          type: 'refund',
          amountInCents: pa.amount_in_cents,
          feeInCents: 0,
          currency: pa.currency,
          sourceId: id,
          sourceType: 'refund',
          description: `Refund of ${pa.id} by ${account.name}`.slice(0, 200),
        })
      : undefined;
    const row: RefundRow = {
      id,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      payment_intent_id: pa.id,
      intent_id: pa.intent_id,
      status: 'succeeded',
      amount_in_cents: pa.amount_in_cents,
      fee_returned_in_cents: txn ? feeBack : 0,
      currency: pa.currency,
      reason: opts.reason ?? null,
      balance_transaction_id: txn?.id ?? null,
      created_at: isoTime(ctx.clock.now()),
    };
    store.insert(row);
    const refund = toRefund(row);
    const view = refundView(ctx, row, pa.customer_id);
    const scope = { accountId: account.id, liveMode: account.live_mode };
    ctx.outbox.emit({ ...scope, type: 'refund.create', objectId: id, payload: refundEventPayload(view) });
    const payerRow = credit ? { ...credit, account_id: payer!.payer_account_id } : null;
    appendSyncRecord(ctx.db, {
      kind: 'refund',
      ...scope,
      createdAt: row.created_at,
      payload: { refund, balance_transaction: txn ?? null, payer_balance_transaction: payerRow },
    });
    return view;
  });
}

export function getRefund(ctx: AppContext, accountIds: string[], liveMode: boolean, id: string): RefundView | undefined {
  const row = refundsStore(ctx.db).byId(id);
  if (!row || !accountIds.includes(row.account_id) || (row.live_mode === 1) !== liveMode) return undefined;
  return refundView(ctx, row, paymentIntentRow(ctx, [row.account_id], row.live_mode === 1, row.payment_intent_id)?.customer_id ?? null);
}
