import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { ApiError } from '../../errors.js';
import { initialState, nextState } from '../../lifecycle.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import type { Account } from '../../accounts/service.js';
import { getCheckout, linkCheckoutPayment, setCheckoutStatus } from '../checkouts/service.js';
import type { Checkout } from '../checkouts/schema.js';
import { markCustomerLive } from '../customers/service.js';
import { createIntent, setIntentState } from '../intents/service.js';
import { feeFor } from '../ledger/service.js';
import { paymentMachine, type PaymentEvent } from './machine.js';
import { chargeDescription, emitPaymentEvents, paymentIntentInput, postPaymentCharge } from './records.js';
import { paymentsStore, type PaymentIntentRow } from './store.js';

/**
 * Payments that wait for their outcome: a bank transfer waiting for the money (bank-transfers.ts)
 * and a card a terminal approved offline, waiting for its processor (a stored payment,
 * docs/stored-payments.md). Both start the same way (a `pending` payment intent, its intent,
 * `intent.pending`) and end the same way (`finishPendingPayment`): nothing is pushed to the central
 * while one waits; its outcome travels as one record, like any other payment's.
 */

/** The pending payment of a checkout, if its current payment waits. */
export function pendingPaymentOf(ctx: AppContext, checkout: Pick<Checkout, 'payment_intent_id'>): PaymentIntentRow | undefined {
  const pa = checkout.payment_intent_id ? paymentsStore(ctx.db).byId(checkout.payment_intent_id) : undefined;
  return pa?.status === 'pending' ? pa : undefined;
}

export interface PendingStart {
  method: PaymentIntentRow['method'];
  channel: string;
  /** The intent's `raw_status` while it waits (`awaiting_funds`, `stored_offline`). */
  rawStatus: string;
  card?: { network: string; last4: string } | null;
  processorReference?: string | null;
  /** A card a terminal stored offline: when (the payment intent and its intent keep it for good). */
  offlineStoredAt?: string | null;
  /**
   * The checkout is `payment_in_progress` already and this payment is the one it was waiting for
   * (a terminal took the charge, then stored it): linked without a move. Otherwise the checkout
   * starts its payment (`START_PAYMENT`) and the machine decides whether it may.
   */
  joinsPaymentInProgress?: boolean;
}

/**
 * In the caller's transaction: records a `pending` payment intent of a checkout and its intent,
 * turns (or keeps) the checkout `payment_in_progress` naming it, and emits `intent.pending` (and its
 * legacy twin for `both` accounts).
 */
export function startPendingPayment(
  ctx: AppContext,
  account: Account,
  checkout: Checkout,
  start: PendingStart,
): { checkout: Checkout; payment: PaymentIntentRow } {
  const at = isoTime(ctx.clock.now());
  const pa: PaymentIntentRow = {
    id: newId('pa'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    intent_id: newId('in'),
    checkout_id: checkout.id,
    method: start.method,
    status: initialState(paymentMachine),
    amount_in_cents: checkout.amount_in_cents,
    currency: checkout.currency,
    fee_in_cents: 0,
    commission_in_cents: 0,
    vat_withheld_in_cents: 0,
    customer_id: checkout.customer_id,
    failure_reason: null,
    card_network: start.card?.network ?? null,
    card_last4: start.card?.last4 ?? null,
    authorization_code: null,
    processor_reference: start.processorReference ?? null,
    installments: null,
    channel: start.channel,
    balance_transaction_id: null,
    tax_invoice_url: null,
    offline_stored_at: start.offlineStoredAt ?? null,
    offline_forwarded_at: null,
    created_at: at,
    updated_at: at,
    payment_method_id: newId('pay_m'),
  };
  paymentsStore(ctx.db).insert(pa);
  createIntent(ctx, paymentIntentInput(pa, checkout, start.rawStatus));
  const links = { latestIntentId: pa.intent_id, paymentIntentId: pa.id };
  const started =
    start.joinsPaymentInProgress && checkout.status === 'payment_in_progress'
      ? linkCheckoutPayment(ctx, account, checkout.id, links)
      : setCheckoutStatus(ctx, account, checkout.id, { type: 'START_PAYMENT' }, links);
  emitPaymentEvents(ctx, account, pa, started);
  return { checkout: started, payment: pa };
}

export interface PendingOutcome {
  failureReason?: string | null;
  processorReference?: string | null;
  senderComment?: string | null;
  /** What the processor gave with a card's outcome (a stored card: the terminal's forward result). */
  card?: { network: string; last4: string } | null;
  authorizationCode?: string | null;
  /**
   * A failure leaves the sale owed: the checkout returns to `unpaid` (a stored card declined later:
   * the buyer has left with the goods, the store collects again) instead of ending `failed`.
   */
  owedAgainOnFailure?: boolean;
}

/**
 * Takes a pending payment to its outcome, in the caller's transaction: the machine's move, the
 * ledger `charge` (with its fee) for a success, the intent's new state, the checkout's move (paid,
 * failed, or unpaid again when canceled or owed again), the events and the sync record of the
 * outcome (`terminal_payment` for a terminal's card, else `checkout_payment`).
 */
export function finishPendingPayment(
  ctx: AppContext,
  account: Account,
  given: PaymentIntentRow,
  event: PaymentEvent,
  outcome: PendingOutcome = {},
): PaymentIntentRow {
  // Read again: a stored card's forward time may have been written since the caller read it.
  const pa = paymentsStore(ctx.db).byId(given.id) ?? given;
  const to = nextState(paymentMachine, pa.status, event);
  if (!to) throw new ApiError('checkout_not_modifiable', { message: `A ${pa.status} payment cannot take ${event.type.toLowerCase()}.` });
  const checkout = getCheckout(ctx, account, pa.checkout_id)!;
  const at = isoTime(ctx.clock.now());
  const succeeded = to === 'succeeded';
  const fee = succeeded ? feeFor(account, pa.amount_in_cents, ctx.config.money) : undefined;
  const txn = fee
    ? postPaymentCharge(ctx, account, { id: pa.id, amountInCents: pa.amount_in_cents, currency: pa.currency, description: chargeDescription(checkout) }, fee)
    : undefined;
  const next: PaymentIntentRow = {
    ...pa,
    status: to,
    fee_in_cents: fee?.fee_in_cents ?? 0,
    commission_in_cents: fee?.commission_in_cents ?? 0,
    vat_withheld_in_cents: fee?.vat_withheld_in_cents ?? 0,
    failure_reason: to === 'failed' ? (outcome.failureReason ?? 'funds_not_received') : null,
    card_network: outcome.card?.network ?? pa.card_network,
    card_last4: outcome.card?.last4 ?? pa.card_last4,
    authorization_code: outcome.authorizationCode ?? pa.authorization_code,
    processor_reference: outcome.processorReference ?? pa.processor_reference,
    balance_transaction_id: txn?.id ?? null,
    updated_at: at,
  };
  if (!paymentsStore(ctx.db).settle(next)) throw new ApiError('checkout_not_modifiable', { message: 'The payment changed meanwhile; read it again.' });
  const input = paymentIntentInput(next, checkout, to === 'failed' ? next.failure_reason! : to);
  if (input.type === 'bank_transfer') input.details.sender_comment = outcome.senderComment ?? null;
  setIntentState(ctx, pa.intent_id, { status: to, rawStatus: input.rawStatus!, details: input.details });
  const checkoutEvent = succeeded ? 'PAYMENT_SUCCEEDED' : to === 'failed' && !outcome.owedAgainOnFailure ? 'PAYMENT_FAILED' : 'ABANDON_PAYMENT';
  const settled = setCheckoutStatus(ctx, account, checkout.id, { type: checkoutEvent });
  if (succeeded && account.live_mode && checkout.customer_id) markCustomerLive(ctx, checkout.customer_id);
  const doc = emitPaymentEvents(ctx, account, next, settled);
  const card = next.card_last4 ? { network: next.card_network ?? 'unknown', last4: next.card_last4 } : null;
  if (succeeded)
    ctx.registry.checkout.afterPay(ctx, account, settled, {
      paymentIntentId: next.id,
      card: pa.method === 'bank_transfer' ? null : card,
      paymentMethodId: pa.payment_method_id,
    });
  appendSyncRecord(ctx.db, {
    kind: pa.method === 'terminal' ? 'terminal_payment' : 'checkout_payment',
    accountId: account.id,
    liveMode: account.live_mode,
    createdAt: at,
    payload: { payment_intent: next, intent: doc, checkout: settled, balance_transaction: txn ?? null },
  });
  return next;
}
