import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { ApiError, notFound } from '../../errors.js';
import { initialState, nextState } from '../../lifecycle.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import type { Account } from '../../accounts/service.js';
import { getCheckout, isExpired, setCheckoutStatus } from '../checkouts/service.js';
import type { Checkout } from '../checkouts/schema.js';
import { markCustomerLive } from '../customers/service.js';
import { createIntent, setIntentState } from '../intents/service.js';
import { feeFor, postBalanceTransaction } from '../ledger/service.js';
import { paymentMachine, type PaymentEvent } from './machine.js';
import { emitPaymentEvents, paymentIntentInput, resultOf, type SettleResult } from './records.js';
import { paymentsStore, type PaymentIntentRow } from './store.js';

/**
 * Bank transfers that wait for the money (docs/events.md, "Pending bank transfers"). The buyer
 * chooses to pay by transfer: the checkout turns `payment_in_progress`, a `pending` payment intent
 * and its intent are recorded and `intent.pending` (and `bank_transfer_intent.pending`) emitted.
 * The bank's notice of the money arriving settles it (`recordBankTransferArrival`, also behind the
 * sandbox helper); the payer giving up cancels it. Nothing is pushed to the central while it waits:
 * its outcome travels as one `checkout_payment` record, like any other payment's.
 */

/** Why a transfer that arrived short failed (`details.failure_reason`, the legacy `failure_reason`). */
export const AMOUNT_SHORT = 'amount_short';

/** The pending payment of a checkout, if its current payment waits. */
export function pendingPaymentOf(ctx: AppContext, checkout: Pick<Checkout, 'payment_intent_id'>): PaymentIntentRow | undefined {
  const pa = checkout.payment_intent_id ? paymentsStore(ctx.db).byId(checkout.payment_intent_id) : undefined;
  return pa?.status === 'pending' ? pa : undefined;
}

/**
 * Starts a bank-transfer payment of a checkout: the checkout waits for the money. Asking again while
 * it waits answers the same pending payment.
 */
export function startBankTransfer(ctx: AppContext, account: Account, checkoutId: string, opts: { channel: string }): { checkout: Checkout; payment: PaymentIntentRow } {
  return startPendingPayment(ctx, account, checkoutId, 'bank_transfer', opts);
}

/**
 * A payment that waits for money sent outside posd: a bank transfer (`awaiting_funds`) or a crypto
 * payment waiting for its on-chain confirmation (`awaiting_confirmation`, src/modules/payments/crypto.ts).
 */
export function startPendingPayment(
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
    const at = isoTime(ctx.clock.now());
    const pa: PaymentIntentRow = {
      id: newId('pa'),
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      intent_id: newId('in'),
      checkout_id: checkout.id,
      method,
      status: initialState(paymentMachine),
      amount_in_cents: checkout.amount_in_cents,
      currency: checkout.currency,
      fee_in_cents: 0,
      commission_in_cents: 0,
      vat_withheld_in_cents: 0,
      customer_id: checkout.customer_id,
      failure_reason: null,
      card_network: null,
      card_last4: null,
      authorization_code: null,
      processor_reference: null,
      installments: null,
      channel: opts.channel,
      balance_transaction_id: null,
      tax_invoice_url: null,
      created_at: at,
      updated_at: at,
    };
    paymentsStore(ctx.db).insert(pa);
    createIntent(ctx, paymentIntentInput(pa, checkout, method === 'crypto' ? 'awaiting_confirmation' : 'awaiting_funds'));
    const current = getCheckout(ctx, account, checkout.id)!;
    const started = setCheckoutStatus(ctx, account, current.id, { type: 'START_PAYMENT' }, { latestIntentId: pa.intent_id, paymentIntentId: pa.id });
    emitPaymentEvents(ctx, account, pa, started);
    return { checkout: started, payment: pa };
  });
}

export interface BankTransferArrival {
  amountInCents: number;
  bankReference?: string | null;
  senderComment?: string | null;
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
    return resultOf(
      finishPendingPayment(ctx, account, pa, short ? { type: 'FAIL' } : { type: 'SUCCEED' }, {
        failureReason: short ? AMOUNT_SHORT : null,
        processorReference: arrival.bankReference ?? `SANDBOX-${pa.id.slice(3, 15).toUpperCase()}`,
        senderComment: arrival.senderComment ?? null,
      }),
    );
  });
}

/**
 * Takes a pending payment to its outcome, in the caller's transaction: the machine's move, the
 * ledger `charge` (with its fee) for a success, the intent's new state, the checkout's move (paid,
 * failed, or unpaid again when canceled), the events and the sync record of the outcome.
 */
export function finishPendingPayment(
  ctx: AppContext,
  account: Account,
  pa: PaymentIntentRow,
  event: PaymentEvent,
  outcome: { failureReason?: string | null; processorReference?: string | null; senderComment?: string | null } = {},
): PaymentIntentRow {
  const to = nextState(paymentMachine, pa.status, event);
  if (!to) throw new ApiError('checkout_not_modifiable', { message: `A ${pa.status} payment cannot take ${event.type.toLowerCase()}.` });
  const checkout = getCheckout(ctx, account, pa.checkout_id)!;
  const at = isoTime(ctx.clock.now());
  const succeeded = to === 'succeeded';
  const fee = succeeded ? feeFor(account, pa.amount_in_cents, ctx.config.money) : undefined;
  const txn = fee
    ? postBalanceTransaction(ctx, {
        accountId: account.id,
        liveMode: account.live_mode,
        type: 'charge',
        amountInCents: pa.amount_in_cents,
        feeInCents: fee.fee_in_cents,
        feeDetails: { commission_in_cents: fee.commission_in_cents, vat_withheld_in_cents: fee.vat_withheld_in_cents },
        currency: pa.currency,
        sourceId: pa.id,
        sourceType: 'payment_intent',
        description: checkout.items.map((i) => i.name).join(', ').slice(0, 200),
      })
    : undefined;
  const next: PaymentIntentRow = {
    ...pa,
    status: to,
    fee_in_cents: fee?.fee_in_cents ?? 0,
    commission_in_cents: fee?.commission_in_cents ?? 0,
    vat_withheld_in_cents: fee?.vat_withheld_in_cents ?? 0,
    failure_reason: to === 'failed' ? (outcome.failureReason ?? 'funds_not_received') : null,
    processor_reference: outcome.processorReference ?? pa.processor_reference,
    balance_transaction_id: txn?.id ?? null,
    updated_at: at,
  };
  if (!paymentsStore(ctx.db).settle(next)) throw new ApiError('checkout_not_modifiable', { message: 'The payment changed meanwhile; read it again.' });
  const input = paymentIntentInput(next, checkout, to === 'failed' ? next.failure_reason! : to);
  if (input.type === 'bank_transfer') input.details.sender_comment = outcome.senderComment ?? null;
  setIntentState(ctx, pa.intent_id, { status: to, rawStatus: input.rawStatus!, details: input.details });
  const checkoutEvent = succeeded ? 'PAYMENT_SUCCEEDED' : to === 'failed' ? 'PAYMENT_FAILED' : 'ABANDON_PAYMENT';
  const settled = setCheckoutStatus(ctx, account, checkout.id, { type: checkoutEvent });
  if (succeeded && account.live_mode && checkout.customer_id) markCustomerLive(ctx, checkout.customer_id);
  const doc = emitPaymentEvents(ctx, account, next, settled);
  if (succeeded) ctx.registry.checkout.afterPay(ctx, account, settled, { paymentIntentId: next.id, card: null });
  appendSyncRecord(ctx.db, {
    kind: 'checkout_payment',
    accountId: account.id,
    liveMode: account.live_mode,
    createdAt: at,
    payload: { payment_intent: next, intent: doc, checkout: settled, balance_transaction: txn ?? null },
  });
  return next;
}
