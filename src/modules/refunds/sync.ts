import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { PushKind } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { SyncedLedgerRow, syncedLedgerMoney } from '../ledger/schema.js';
import type { Account } from '../../accounts/service.js';
import { hasBalanceTransaction, postBalanceTransaction, type BalanceTransaction } from '../ledger/service.js';
import type { Refund } from './service.js';
import { balancePaymentOf, paymentIntentRow } from '../payments/service.js';
import { refundsStore } from './store.js';

/** The `refund` record `refundPaymentIntent` appends. */
export interface RefundRecord {
  refund: Refund;
  balance_transaction: BalanceTransaction | null;
  /** A balance payment's refund: the payer's credit (absent from records of an older posd). */
  payer_balance_transaction?: (BalanceTransaction & { account_id: string }) | null;
}

/** The fields of a `refund` record the central relies on. */
export const RefundPayload = Type.Object({
  refund: Type.Object({
    id: Type.String(),
    payment_intent_id: Type.String(),
    intent_id: Type.String(),
    amount_in_cents: Type.Number(),
    currency: Type.String(),
    created_at: Type.String(),
  }),
  balance_transaction: Type.Optional(Type.Union([Type.Null(), SyncedLedgerRow])),
  payer_balance_transaction: Type.Optional(Type.Union([Type.Null(), Type.Intersect([SyncedLedgerRow, Type.Object({ account_id: Type.String() })])])),
});

/**
 * A refund made at a store, applied at the central (sync): the refund and its ledger `refund` row
 * (gross back, fee returned as the store decided) under the store's ids and times; the central keeps
 * its own running balance; a balance payment's refund also credits the payer back (its ledger
 * `refund` row, once by id). Returns the id of another refund when the central already refunded that
 * payment itself (a payment is refunded once): the caller refuses the record, nothing is written.
 * No events: the store's `refund.create` arrives on its own and keeps its id.
 */
export function applyStoreRefund(ctx: AppContext, account: Account, record: RefundRecord): { conflictingRefundId: string } | { reason: string } | null {
  const { refund, balance_transaction: txn } = record;
  const store = refundsStore(ctx.db);
  if (store.byId(refund.id)) return null;
  const other = store.byPaymentIntent(refund.payment_intent_id);
  if (other) return { conflictingRefundId: other.id };
  // The payer's credit may only go to the payer the central holds for that balance payment.
  const credit = record.payer_balance_transaction;
  if (credit) {
    const link = balancePaymentOf(ctx, refund.payment_intent_id);
    if (!link || link.payer_account_id !== credit.account_id || link.merchant_account_id !== account.id) {
      return { reason: `ledger row ${credit.id} credits ${credit.account_id}, which did not pay ${refund.payment_intent_id} from its balance at the central` };
    }
    if (!hasBalanceTransaction(ctx, credit.id)) {
      postBalanceTransaction(ctx, {
        id: credit.id,
        createdAt: credit.created_at,
        accountId: credit.account_id,
        liveMode: account.live_mode,
        type: 'refund',
        amountInCents: credit.amount_in_cents,
        feeInCents: credit.fee_in_cents,
        currency: credit.currency,
        sourceId: refund.id,
        sourceType: 'refund',
        description: credit.description,
      });
    }
  }
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

/**
 * What the central's state must allow for a pushed refund (issue 32, at projection): its payment
 * exists at the central under the record's account and environment, succeeded, in the refund's
 * currency, and the refund is no larger than what is left of it (a payment is refunded once, so
 * what is left is the payment's amount, or nothing once the central holds another refund of it). A
 * refund the central holds already passes (applied once).
 */
function checkStoreRefund(
  ctx: AppContext,
  record: { account_id: string; live_mode: boolean; payload: RefundRecord },
): { code: string; field: string; reason: string } | null {
  const { refund } = record.payload;
  const refunds = refundsStore(ctx.db);
  if (refunds.byId(refund.id)) return null;
  const field = 'payload.refund.payment_intent_id';
  const pa = paymentIntentRow(ctx, [record.account_id], record.live_mode, refund.payment_intent_id);
  if (!pa) {
    return { code: 'unknown_reference', field, reason: `payment ${refund.payment_intent_id} is not a payment of account ${record.account_id} at the central` };
  }
  if (pa.status !== 'succeeded')
    return { code: 'transition_not_allowed', field, reason: `payment ${pa.id} is ${pa.status} at the central; only a succeeded payment is refunded` };
  if (pa.currency !== refund.currency)
    return { code: 'invalid_currency', field: 'payload.refund.currency', reason: `refund in ${refund.currency} of payment ${pa.id} in ${pa.currency}` };
  const other = refunds.byPaymentIntent(pa.id);
  const left = other ? 0 : pa.amount_in_cents;
  if (refund.amount_in_cents > left) {
    return {
      code: 'refund_exceeds_payment',
      field: 'payload.refund.amount_in_cents',
      reason: `refund of ${refund.amount_in_cents} cents; ${left} cents of payment ${pa.id} are left to refund at the central`,
    };
  }
  return null;
}

/**
 * A refund made at the store (`refund`): applied with the store's ids and its ledger `refund` row. A
 * payment the central refunded itself meanwhile is refused (refunded once).
 */
export const refundPush: PushKind<RefundRecord> = {
  payload: RefundPayload,
  malformed: 'refund record without refund',
  check: (ctx, record) => checkStoreRefund(ctx, record),
  money: (p) => [
    { field: 'refund.amount_in_cents', amount: p.refund.amount_in_cents, currency: p.refund.currency },
    ...syncedLedgerMoney('balance_transaction', p.balance_transaction),
    ...syncedLedgerMoney('payer_balance_transaction', p.payer_balance_transaction),
  ],
  apply(ctx, record) {
    const account = accountsOf(ctx).account(record.account_id)!;
    const conflict = applyStoreRefund(ctx, account, record.payload);
    if (conflict && 'reason' in conflict) return conflict.reason;
    if (conflict) return `payment ${record.payload.refund.payment_intent_id} was already refunded at the central by ${conflict.conflictingRefundId}`;
  },
  movesMoney: true,
  totals: (p) => {
    const r = p.refund as { currency?: unknown; amount_in_cents?: unknown } | undefined;
    return typeof r?.currency === 'string' && typeof r.amount_in_cents === 'number' ? { currency: r.currency, amount_in_cents: r.amount_in_cents } : null;
  },
};
