import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { PushKind } from '../../sync/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { SyncedLedgerRow } from '../ledger/schema.js';
import type { Account } from '../../accounts/service.js';
import type { Checkout } from '../checkouts/schema.js';
import { insertStoreCheckout } from '../checkouts/service.js';
import { intentRow, createIntent } from '../intents/service.js';
import { feeFor, hasBalanceTransaction, postBalanceTransaction, type BalanceTransaction } from '../ledger/service.js';
import { withFeedOrigin } from '../../outbox/feed-changes.js';
import { paymentIntentInput } from './records.js';
import { paymentsStore, type PaymentIntentRow } from './store.js';

/** The `terminal_payment` / `checkout_payment` record `settleCheckoutPayment` appends. */
export interface PaymentRecord {
  payment_intent: PaymentIntentRow;
  intent: { payment?: { id?: string }; raw_status?: string; created_at?: string };
  checkout: Checkout;
  balance_transaction: BalanceTransaction | null;
}

/** The fields of a `terminal_payment` / `checkout_payment` record the central relies on. */
export const PaymentPayload = Type.Object({
  payment_intent: Type.Object({
    id: Type.String(),
    intent_id: Type.String(),
    amount_in_cents: Type.Number(),
    currency: Type.String(),
    // A bank transfer's record is pushed once it settles: never `pending`, possibly `canceled`.
    status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('canceled')]),
  }),
  checkout: Type.Object({ id: Type.String(), items: Type.Array(Type.Unknown()) }),
  intent: Type.Object({}),
  balance_transaction: Type.Optional(Type.Union([Type.Null(), SyncedLedgerRow])),
});

/**
 * A checkout payment settled at a store (terminal, card, bank transfer), applied at the central
 * (sync): the checkout as settled, the payment intent, its unified intent and, for a success, the
 * ledger `charge` row with the store's fee, all under the store's ids and times. The central numbers
 * the receipt itself and keeps its own running balance. No events (the store's arrive on their own),
 * no coupon redemption or subscription (those travel as their own kinds), and each part is written
 * only when absent, so no ledger row is ever doubled.
 */
export function applyStorePayment(ctx: AppContext, account: Account, record: PaymentRecord): void {
  const { payment_intent: pa, checkout, balance_transaction: txn } = record;
  const payments = paymentsStore(ctx.db);
  if (payments.byId(pa.id)) return;
  insertStoreCheckout(ctx, account, checkout);
  if (txn && !hasBalanceTransaction(ctx, txn.id)) {
    postBalanceTransaction(ctx, {
      id: txn.id,
      createdAt: txn.created_at,
      accountId: account.id,
      liveMode: account.live_mode,
      type: 'charge',
      amountInCents: txn.amount_in_cents,
      feeInCents: txn.fee_in_cents,
      feeDetails: txn.fee_details,
      currency: txn.currency,
      sourceId: pa.id,
      sourceType: 'payment_intent',
      description: txn.description,
    });
    centralFee(ctx, account, pa.id, txn);
  }
  const row: PaymentIntentRow = { ...pa, account_id: account.id, live_mode: account.live_mode ? 1 : 0 };
  if (!intentRow(ctx, pa.intent_id)) {
    createIntent(
      ctx,
      paymentIntentInput(row, checkout, record.intent.raw_status ?? pa.status, {
        paymentId: record.intent.payment?.id,
        createdAt: record.intent.created_at ?? pa.created_at,
      }),
    );
  }
  payments.insert(row);
}

/**
 * The store's fee is provisional: the central computes the charge's fee with its own settings and,
 * when it differs, posts an `adjustment` row for the difference (amount 0, fee = central − store)
 * against the payment. The store's row stays as the store wrote it (the ledger is append-only), and
 * the adjustment is the central's own decision, so it reaches every box of the account through the
 * feed, the pushing box included.
 */
function centralFee(ctx: AppContext, account: Account, paymentId: string, txn: BalanceTransaction): void {
  const fee = feeFor(account, txn.amount_in_cents, ctx.config.money);
  if (fee.fee_in_cents === txn.fee_in_cents) return;
  withFeedOrigin(ctx.db, null, () =>
    postBalanceTransaction(ctx, {
      accountId: account.id,
      liveMode: account.live_mode,
      type: 'adjustment',
      amountInCents: 0,
      feeInCents: fee.fee_in_cents - txn.fee_in_cents,
      feeDetails: {
        commission_in_cents: fee.commission_in_cents - (txn.fee_details?.commission_in_cents ?? 0),
        vat_withheld_in_cents: fee.vat_withheld_in_cents - (txn.fee_details?.vat_withheld_in_cents ?? 0),
      },
      currency: txn.currency,
      sourceId: paymentId,
      sourceType: 'payment_intent',
      description: `fee of ${txn.id} at the central's rate`,
    }),
  );
}

/**
 * A checkout paid at the store (`terminal_payment`, `checkout_payment`): applied with the store's
 * ids, its ledger `charge` row and fee included. Only a success weighs in the totals.
 */
function paymentPush(kind: string): PushKind<PaymentRecord> {
  return {
    payload: PaymentPayload,
    consistent: (p) => p.checkout.id === p.payment_intent.checkout_id,
    malformed: `${kind} record without payment_intent, intent or checkout`,
    apply(ctx, record) {
      const account = accountsOf(ctx).account(record.account_id)!;
      applyStorePayment(ctx, account, record.payload);
    },
    totals: (p) => {
      const pa = p.payment_intent as { status?: unknown; currency?: unknown; amount_in_cents?: unknown } | undefined;
      return pa?.status === 'succeeded' && typeof pa.currency === 'string' && typeof pa.amount_in_cents === 'number'
        ? { currency: pa.currency, amount_in_cents: pa.amount_in_cents }
        : null;
    },
  };
}

export const paymentPushKinds = { terminal_payment: paymentPush('terminal_payment'), checkout_payment: paymentPush('checkout_payment') };
