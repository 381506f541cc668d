import { Type } from '@sinclair/typebox';
import { newId } from '../../ids.js';
import type { AppContext } from '../../context.js';
import type { PushKind, SyncOrigin } from '../../sync/shared/registry.js';
import { inKeyScope, payloadTimeRefusal, type CheckRefusal } from '../../sync/shared/record-checks.js';
import { accountsOf } from '../../accounts/service.js';
import { SyncedLedgerRow, syncedLedgerMoney } from '../ledger/schema.js';
import type { Account } from '../../accounts/service.js';
import type { Checkout } from '../checkouts/schema.js';
import { checkoutAllows, checkoutForPage, insertStoreCheckout } from '../checkouts/service.js';
import { intentRow, createIntent } from '../intents/service.js';
import { balanceDetails } from '../../events/payloads.js';
import { balancePaymentsStore, type BalancePaymentRow } from './balance-store.js';
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
export function applyStorePayment(ctx: AppContext, account: Account, record: PaymentRecord, opts: { payerAccountId?: string } = {}): void {
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
  // A record from a box that predates payment_method_id carries none: the central names the method.
  const row: PaymentIntentRow = {
    ...pa,
    payment_method_id: pa.payment_method_id ?? newId('pay_m'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
  };
  if (!intentRow(ctx, pa.intent_id)) {
    createIntent(
      ctx,
      paymentIntentInput(
        row,
        checkout,
        record.intent.raw_status ?? pa.status,
        { paymentId: record.intent.payment?.id, createdAt: record.intent.created_at ?? pa.created_at },
        { payerAccountId: opts.payerAccountId },
      ),
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
 * What the central's state must allow for a pushed payment (issue 32, at projection): a checkout the
 * central already holds is one of the record's account, in the same environment, and its machine
 * allows this outcome from where it is (unpaid, in progress...), unless this very payment settled it
 * already; its amount is the checkout's. A payment the central holds already passes (applied once).
 */
export function checkStorePayment(
  ctx: AppContext,
  record: { account_id: string; live_mode: boolean; payload: PaymentRecord },
): { code: string; field: string; reason: string } | null {
  const { payment_intent: pa, checkout } = record.payload;
  if (paymentsStore(ctx.db).byId(pa.id)) return null;
  const held = checkoutForPage(ctx, checkout.id);
  if (!held) return null;
  const field = 'payload.checkout.id';
  if (held.account_id !== record.account_id || held.live_mode !== record.live_mode) {
    return { code: 'foreign_reference', field, reason: `checkout ${checkout.id} is not a checkout of account ${record.account_id} at the central` };
  }
  if (held.payment_intent_id === pa.id) return null;
  const event = pa.status === 'succeeded' ? 'PAYMENT_SUCCEEDED' : 'PAYMENT_FAILED';
  if (!checkoutAllows(held.status, event)) {
    return {
      code: 'transition_not_allowed',
      field,
      reason: `checkout ${checkout.id} is ${held.status} at the central; a payment may settle only an unpaid checkout or its own`,
    };
  }
  if (pa.status === 'succeeded' && held.amount_in_cents !== pa.amount_in_cents) {
    return {
      code: 'amount_mismatch',
      field: 'payload.payment_intent.amount_in_cents',
      reason: `payment ${pa.id} is ${pa.amount_in_cents} cents; checkout ${checkout.id} is ${held.amount_in_cents} cents at the central`,
    };
  }
  return null;
}

/** A payment record's amounts: the payment's, and its ledger row's (checked at receipt). */
function paymentMoney(p: PaymentRecord) {
  return [
    { field: 'payment_intent.amount_in_cents', amount: p.payment_intent.amount_in_cents, currency: p.payment_intent.currency },
    ...syncedLedgerMoney('balance_transaction', p.balance_transaction),
  ];
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
    money: paymentMoney,
    check: (ctx, record) => checkStorePayment(ctx, record),
    apply(ctx, record) {
      const account = accountsOf(ctx).account(record.account_id)!;
      applyStorePayment(ctx, account, record.payload);
    },
    movesMoney: true,
    totals: (p) => {
      const pa = p.payment_intent as { status?: unknown; currency?: unknown; amount_in_cents?: unknown } | undefined;
      return pa?.status === 'succeeded' && typeof pa.currency === 'string' && typeof pa.amount_in_cents === 'number'
        ? { currency: pa.currency, amount_in_cents: pa.amount_in_cents }
        : null;
    },
  };
}

/**
 * The `balance_payment` record `payCheckoutFromBalance` appends (a record of the merchant's): the
 * merchant's side as a checkout payment carries it and, when it succeeded, the payer's side: the
 * `balance_payments` row linking the two, the payer's intent (`paid`) and its ledger `payment` row.
 */
export interface BalancePaymentRecord extends PaymentRecord {
  payer_account_id: string;
  payer: {
    balance_payment: BalancePaymentRow;
    intent: { id: string; payment_id: string; created_at: string };
    balance_transaction: BalanceTransaction & { account_id: string };
  } | null;
}

const BalancePaymentPayload = Type.Intersect([
  PaymentPayload,
  Type.Object({
    payer_account_id: Type.String(),
    payer: Type.Union([
      Type.Null(),
      Type.Object({
        balance_payment: Type.Object({
          id: Type.String(),
          payment_intent_id: Type.String(),
          merchant_account_id: Type.String(),
          payer_account_id: Type.String(),
          payer_intent_id: Type.String(),
          payer_balance_transaction_id: Type.String(),
          amount_in_cents: Type.Number(),
          currency: Type.String(),
          created_at: Type.String(),
        }),
        intent: Type.Object({ id: Type.String(), payment_id: Type.String(), created_at: Type.String() }),
        balance_transaction: Type.Intersect([SyncedLedgerRow, Type.Object({ account_id: Type.String(), created_at: Type.String() })]),
      }),
    ]),
  }),
]);

/**
 * What the central's state must allow for a pushed balance payment (issue 32, at projection): the
 * payer is an account the central holds, of the pushing store's key (its account, its sandbox, its
 * connected children), in the merchant's environment and not the merchant itself; its side's time
 * is neither after the record nor before the store; then as any payment (`checkStorePayment`).
 */
function checkStoreBalancePayment(
  ctx: AppContext,
  record: { account_id: string; live_mode: boolean; created_at: string; payload: BalancePaymentRecord },
  origin: SyncOrigin,
): CheckRefusal {
  if (origin.restoring) return null;
  const p = record.payload;
  if (paymentsStore(ctx.db).byId(p.payment_intent.id)) return null;
  const payer = accountsOf(ctx).account(p.payer_account_id);
  if (!payer || payer.live_mode !== record.live_mode || payer.id === record.account_id || !inKeyScope(ctx, origin.keyAccountId, payer)) {
    return {
      code: 'foreign_reference',
      field: 'payload.payer_account_id',
      reason: `payer ${p.payer_account_id} is not another account of this store's key in the merchant's environment at the central`,
    };
  }
  const time = payloadTimeRefusal(ctx, record, origin, 'payload.payer.balance_payment.created_at', p.payer?.balance_payment.created_at);
  return time ?? checkStorePayment(ctx, record);
}

/**
 * A balance payment made at a store, applied at the central: the merchant's side as any checkout
 * payment (`applyStorePayment`: checkout, payment intent, intent, ledger `charge`, the central's fee
 * adjustment when its rate differs) and, for a success, the payer's side: its ledger `payment` row,
 * its `paid` intent and the `balance_payments` link, all under the store's ids and times, each
 * written only when absent. The payer must be an account of the pushing store's key in the same
 * environment (`keyAccountId`; null: a box taking back its own record, any account it holds);
 * otherwise the record is refused, nothing written. No events: the store's
 * (`intent.succeeded` to the merchant, `intent.paid` to the payer) arrive as `event` records.
 */
export function applyStoreBalancePayment(ctx: AppContext, merchant: Account, keyAccountId: string | null, record: BalancePaymentRecord): string | null {
  const payer = accountsOf(ctx).account(record.payer_account_id);
  if (!payer || payer.live_mode !== merchant.live_mode || payer.id === merchant.id || (keyAccountId !== null && !inKeyScope(ctx, keyAccountId, payer))) {
    return `payer ${record.payer_account_id} of balance payment ${record.payment_intent.id} is not an account of this store at the central`;
  }
  applyStorePayment(ctx, merchant, record, { payerAccountId: payer.id });
  const side = record.payer;
  if (!side) return null;
  const txn = side.balance_transaction;
  if (!hasBalanceTransaction(ctx, txn.id)) {
    postBalanceTransaction(ctx, {
      id: txn.id,
      createdAt: txn.created_at,
      accountId: payer.id,
      liveMode: payer.live_mode,
      type: 'payment',
      amountInCents: txn.amount_in_cents,
      feeInCents: txn.fee_in_cents,
      currency: txn.currency,
      sourceId: record.payment_intent.id,
      sourceType: 'payment_intent',
      description: txn.description,
    });
  }
  const link = side.balance_payment;
  if (!intentRow(ctx, side.intent.id)) {
    createIntent(ctx, {
      id: side.intent.id,
      accountId: payer.id,
      liveMode: payer.live_mode,
      type: 'balance',
      status: 'paid',
      rawStatus: 'paid',
      legacyId: link.id,
      amountInCents: link.amount_in_cents,
      currency: link.currency,
      customerId: null,
      checkoutId: record.checkout.id,
      details: balanceDetails({
        failure_reason: null,
        fee: 0,
        vat_withheld: 0,
        vat_withheld_currency: link.currency,
        payer_account_id: payer.id,
        merchant_account_id: merchant.id,
      }),
      paymentId: side.intent.payment_id,
      createdAt: side.intent.created_at,
    });
  }
  const links = balancePaymentsStore(ctx.db);
  if (!links.byPaymentIntent(record.payment_intent.id)) {
    links.insert({ ...link, live_mode: merchant.live_mode ? 1 : 0, merchant_account_id: merchant.id, payer_account_id: payer.id });
  }
  return null;
}

/**
 * A checkout paid at the store from another account's balance (`balance_payment`, the merchant's
 * record): both sides applied. Only a success weighs in the totals, as for other payments.
 */
export const balancePaymentPush: PushKind<BalancePaymentRecord> = {
  payload: BalancePaymentPayload,
  consistent: (p) => {
    const pa = p.payment_intent;
    if (p.checkout.id !== pa.checkout_id || pa.method !== 'balance') return false;
    if ((pa.status === 'succeeded') !== (p.payer !== null)) return false;
    if (!p.payer) return true;
    const { balance_payment: link, balance_transaction: txn } = p.payer;
    return (
      link.payment_intent_id === pa.id &&
      link.payer_account_id === p.payer_account_id &&
      link.payer_intent_id === p.payer.intent.id &&
      link.payer_balance_transaction_id === txn.id &&
      txn.account_id === p.payer_account_id &&
      txn.amount_in_cents === -pa.amount_in_cents &&
      link.amount_in_cents === pa.amount_in_cents &&
      link.currency === pa.currency
    );
  },
  malformed: 'balance_payment record without a consistent payment_intent, checkout and payer side',
  money: (p) => [...paymentMoney(p), ...syncedLedgerMoney('payer.balance_transaction', p.payer?.balance_transaction)],
  check: (ctx, record, origin) => checkStoreBalancePayment(ctx, record, origin),
  apply(ctx, record, origin) {
    const merchant = accountsOf(ctx).account(record.account_id)!;
    // A box taking its own record back after a restore (sync/store/rejoin.ts) holds only its own accounts.
    return applyStoreBalancePayment(ctx, merchant, origin.restoring ? null : origin.keyAccountId, record.payload);
  },
  movesMoney: true,
  totals: paymentPush('balance_payment').totals,
};

export const paymentPushKinds = {
  terminal_payment: paymentPush('terminal_payment'),
  checkout_payment: paymentPush('checkout_payment'),
  balance_payment: balancePaymentPush,
};
