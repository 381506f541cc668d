import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { postBalanceTransaction } from '../ledger/service.js';
import { balancePaymentOf, type PaymentIntentRow } from '../payments/service.js';
import { customerById, customerView } from '../customers/service.js';
import { refundsStore, type RefundRow } from './store.js';
import { refundEventPayload, refundViewOf, toRefund, type RefundView } from './views.js';

export type RefundAnswer = RefundView & { failure_reason: string | null };

/** A new refund of the whole of `pa`, not yet on the ledger: `succeeded` once money-back posts it, `pending` while a terminal carries it. */
export function newRefundRow(ctx: AppContext, account: Account, pa: PaymentIntentRow, status: 'succeeded' | 'pending', reason: string | null): RefundRow {
  return {
    id: newId('re'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    payment_intent_id: pa.id,
    intent_id: pa.intent_id,
    status,
    amount_in_cents: pa.amount_in_cents,
    fee_returned_in_cents: 0,
    currency: pa.currency,
    reason,
    balance_transaction_id: null,
    created_at: isoTime(ctx.clock.now()),
  };
}

/**
 * The hosted answer of a refund: its row with the paying customer (and that customer's user), and
 * why a refund a terminal carried out failed (null otherwise).
 */
export function refundView(ctx: AppContext, row: RefundRow, customerId: string | null, failureReason: string | null = null): RefundAnswer {
  const c = customerId ? customerById(ctx, customerId) : undefined;
  const view = c ? customerView(ctx, c) : undefined;
  return {
    ...refundViewOf(row, {
      customer: view ? { id: view.id, email: view.email, full_name: view.full_name } : null,
      user_id: view?.user_id ?? null,
    }),
    failure_reason: failureReason,
  };
}

/**
 * The money of a refund, once it is done (at once for most payments; on the terminal's approval for
 * one a nexo terminal carries out): the ledger `refund` row debits the gross and, when
 * `money.refund_returns_fee` (default), gives the fee back, so a refunded charge nets to zero. The
 * balance may go below zero: the money already left with the customer and the ledger must say so. A
 * balance payment's amount goes back to the payer's balance (a positive ledger `refund` row of the
 * payer's, no fee). Then `refund.create` and the `refund` sync record. Writes `row` as succeeded (new
 * or pending); in the caller's transaction.
 */
export function refundMoneyBack(
  ctx: AppContext,
  scope: { accountId: string; liveMode: boolean; accountName: string },
  pa: PaymentIntentRow,
  row: RefundRow,
  insert: boolean,
): RefundAnswer {
  const feeBack = ctx.config.money.refund_returns_fee ? -pa.fee_in_cents : 0;
  // A payment without a ledger row (cash) has nothing to reverse in the balance.
  const txn = pa.balance_transaction_id
    ? postBalanceTransaction(ctx, {
        accountId: scope.accountId,
        liveMode: scope.liveMode,
        type: 'refund',
        amountInCents: -pa.amount_in_cents,
        feeInCents: feeBack,
        feeDetails: feeBack ? { commission_in_cents: -pa.commission_in_cents, vat_withheld_in_cents: -pa.vat_withheld_in_cents } : undefined,
        currency: pa.currency,
        sourceId: row.id,
        sourceType: 'refund',
        description: row.reason,
      })
    : undefined;
  // A balance payment's money came from another account: it goes back there (docs/events.md
  // "Balance payments"), in the same transaction as the merchant's debit.
  const payer = txn ? balancePaymentOf(ctx, pa.id) : undefined;
  const credit = payer
    ? postBalanceTransaction(ctx, {
        accountId: payer.payer_account_id,
        liveMode: scope.liveMode,
        type: 'refund',
        amountInCents: pa.amount_in_cents,
        feeInCents: 0,
        currency: pa.currency,
        sourceId: row.id,
        sourceType: 'refund',
        description: `Refund of ${pa.id} by ${scope.accountName}`.slice(0, 200),
      })
    : undefined;
  const done: RefundRow = { ...row, status: 'succeeded', fee_returned_in_cents: txn ? feeBack : 0, balance_transaction_id: txn?.id ?? null };
  const store = refundsStore(ctx.db);
  if (insert) store.insert(done);
  else store.settle(done);
  const view = refundView(ctx, done, pa.customer_id);
  const s = { accountId: scope.accountId, liveMode: scope.liveMode };
  // The event keeps the shape it always had (docs/events.md): a refund it reports succeeded.
  const { failure_reason: _failure, ...eventView } = view;
  ctx.outbox.emit({ ...s, type: 'refund.create', objectId: done.id, payload: refundEventPayload(eventView) });
  const payerRow = credit ? { ...credit, account_id: payer!.payer_account_id } : null;
  appendSyncRecord(ctx.db, {
    kind: 'refund',
    ...s,
    createdAt: done.created_at,
    payload: { refund: toRefund(done), balance_transaction: txn ?? null, payer_balance_transaction: payerRow },
  });
  return view;
}
