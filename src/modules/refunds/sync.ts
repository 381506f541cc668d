import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import { hasBalanceTransaction, postBalanceTransaction, type BalanceTransaction } from '../ledger/service.js';
import type { Refund } from './service.js';
import { refundsStore } from './store.js';

/** The `refund` record `refundPaymentIntent` appends. */
export interface RefundRecord {
  refund: Refund;
  balance_transaction: BalanceTransaction | null;
}

export function isRefundRecord(p: Record<string, unknown>): p is Record<string, unknown> & RefundRecord {
  const r = p.refund as Partial<Refund> | undefined;
  const txn = p.balance_transaction as Partial<BalanceTransaction> | null | undefined;
  return (
    typeof r?.id === 'string' &&
    typeof r.payment_intent_id === 'string' &&
    typeof r.intent_id === 'string' &&
    typeof r.amount_in_cents === 'number' &&
    typeof r.currency === 'string' &&
    typeof r.created_at === 'string' &&
    (txn === null || txn === undefined || (typeof txn.id === 'string' && typeof txn.amount_in_cents === 'number' && typeof txn.fee_in_cents === 'number'))
  );
}

/**
 * A refund made at a store, applied at the central (sync): the refund and its ledger `refund` row
 * (gross back, fee returned as the store decided) under the store's ids and times; the central keeps
 * its own running balance. Returns the id of another refund when the central already refunded that
 * payment itself (a payment is refunded once): the caller refuses the record, nothing is written.
 * No events: the store's `refund.create` arrives on its own and keeps its id.
 */
export function applyStoreRefund(ctx: AppContext, account: Account, record: RefundRecord): { conflictingRefundId: string } | null {
  const { refund, balance_transaction: txn } = record;
  const store = refundsStore(ctx.db);
  if (store.byId(refund.id)) return null;
  const other = store.byPaymentIntent(refund.payment_intent_id);
  if (other) return { conflictingRefundId: other.id };
  if (txn && !hasBalanceTransaction(ctx, txn.id)) {
    postBalanceTransaction(ctx, {
      id: txn.id,
      createdAt: txn.created_at,
      accountId: account.id,
      liveMode: account.live_mode,
      type: 'refund',
      amountInCents: txn.amount_in_cents,
      feeInCents: txn.fee_in_cents,
      feeDetails: txn.fee_details,
      currency: txn.currency,
      sourceId: refund.id,
      sourceType: 'refund',
      description: txn.description,
    });
  }
  store.insert({
    id: refund.id,
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    payment_intent_id: refund.payment_intent_id,
    intent_id: refund.intent_id,
    status: refund.status,
    amount_in_cents: refund.amount_in_cents,
    fee_returned_in_cents: refund.fee_returned_in_cents,
    currency: refund.currency,
    reason: refund.reason,
    balance_transaction_id: refund.balance_transaction_id,
    created_at: refund.created_at,
  });
  return null;
}
