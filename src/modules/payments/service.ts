import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { ApiError, notFound } from '../../errors.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import type { Account } from '../../accounts/service.js';
import { getCheckout, isExpired, setCheckoutStatus } from '../checkouts/service.js';
import { markCustomerLive } from '../customers/service.js';
import { feeFor } from '../ledger/service.js';
import { createIntent, setIntentTaxInvoiceUrl } from '../intents/service.js';
import type { Checkout } from '../checkouts/schema.js';
import { paymentsStore, type PaymentIntentRow, type SavedCardRow } from './store.js';
import { publishTaxInvoiceUrl } from '../tax-invoices/service.js';
import { initialState, nextState } from '../../lifecycle.js';
import { paymentMachine } from './machine.js';
import { chargeDescription, emitPaymentEvents, paymentIntentInput, postPaymentCharge, resultOf, type SettleResult } from './records.js';
import { recordBankTransferArrival, startBankTransfer } from './bank-transfers.js';
import { finishPendingPayment, pendingPaymentOf } from './pending.js';
import { startCryptoPayment } from './crypto.js';
import { offlineMark } from './offline-mark.js';

export { paymentIntentInput, type SettleResult } from './records.js';
export { recordBankTransferArrival, type BankTransferArrival } from './bank-transfers.js';
export { finishPendingPayment, startPendingPayment } from './pending.js';
export type { PaymentIntentRow, SavedCardRow } from './store.js';
export { balancePaymentOf, payCheckoutFromBalance } from './balance.js';
export type { BalancePaymentRow } from './balance-store.js';
export { recordCryptoConfirmation, startCryptoPayment } from './crypto.js';

export type PaymentMethod = PaymentIntentRow['method'];

export interface SettleInput {
  checkoutId: string;
  method: PaymentMethod;
  outcome: 'succeeded' | 'failed';
  failureReason?: string | null;
  card?: { network: string; last4: string } | null;
  authorizationCode?: string | null;
  processorReference?: string | null;
  installments?: number | null;
  channel?: string;
  /**
   * A card already saved (`pay_m_`) being charged again (a one-time payment, a subscription's
   * renewal): the payment names it and saves nothing new. Without it a card paid at a checkout is
   * saved under a new id (docs/compatibility.md, "One id per saved card").
   */
  paymentMethodId?: string | null;
}

/**
 * Settles a checkout's payment in one transaction: the checkout turns paid or failed, a payment
 * intent (pa_) and its unified intent (in_) are recorded, a success posts the ledger `charge` row
 * with its fee (cash carries none, spec 4.4) and makes the customer live when the money is real,
 * and the `intent.*` event (plus the legacy one for legacy-format accounts) and a sync record join
 * the same transaction. A checkout already settled returns its result and emits nothing, so a
 * terminal that repeats its result after a reconnect cannot move money twice.
 */
export function settleCheckoutPayment(ctx: AppContext, account: Account, input: SettleInput): SettleResult {
  return tx(ctx.db, () => {
    const checkout = getCheckout(ctx, account, input.checkoutId);
    if (!checkout) throw notFound('checkout', input.checkoutId);
    const store = paymentsStore(ctx.db);
    const waiting = pendingPaymentOf(ctx, checkout);
    if (waiting?.method === 'bank_transfer' && input.method === 'bank_transfer') {
      // The outcome of the payment the checkout waits for (a bank transfer): settle that one.
      if (input.outcome === 'succeeded') return recordBankTransferArrival(ctx, account, waiting.id, { amountInCents: waiting.amount_in_cents });
      return resultOf(finishPendingPayment(ctx, account, waiting, { type: 'FAIL' }, { failureReason: input.failureReason }));
    }
    if (waiting?.method === 'terminal') {
      // A card a terminal stored offline: the customer's card is charged when the terminal forwards
      // it, so the checkout takes no other payment meanwhile (its outcome settles that one:
      // terminals/stored/service.ts).
      throw new ApiError('checkout_not_modifiable', {
        message: 'The checkout waits for a card payment a terminal stored offline; its outcome comes when the terminal forwards it.',
      });
    }
    // The payer paid another way: the transfer they announced is canceled first (intent.canceled).
    if (waiting) {
      finishPendingPayment(ctx, account, waiting, { type: 'CANCEL' });
      return settleCheckoutPayment(ctx, account, input);
    }
    if (checkout.status === 'paid' || checkout.status === 'failed') {
      const existing = checkout.payment_intent_id ? store.byId(checkout.payment_intent_id) : undefined;
      if (existing) return resultOf(existing);
      throw new ApiError('checkout_not_modifiable', { message: `The checkout is already ${checkout.status}.` });
    }
    if (input.outcome === 'succeeded' && isExpired(ctx, checkout)) throw new ApiError('checkout_expired');
    // The checkout hooks other modules declared (contracts: spec 4.8, unsigned refuses payment).
    if (input.outcome === 'succeeded') ctx.registry.checkout.beforePay(ctx, checkout.id);

    const at = isoTime(ctx.clock.now());
    const succeeded = input.outcome === 'succeeded';
    const paId = newId('pa');
    const intentId = newId('in');
    const paymentMethodId = input.paymentMethodId ?? newId('pay_m');
    // A checkout of free-trial lines only is paid with 0: the card is kept, no money moves, no ledger row.
    const fee = succeeded && input.method !== 'cash' && checkout.amount_in_cents > 0 ? feeFor(account, checkout.amount_in_cents, ctx.config.money) : undefined;

    const txn = fee
      ? postPaymentCharge(
          ctx,
          account,
          { id: paId, amountInCents: checkout.amount_in_cents, currency: checkout.currency, description: chargeDescription(checkout) },
          fee,
        )
      : undefined;

    const pa: PaymentIntentRow = {
      id: paId,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      intent_id: intentId,
      checkout_id: checkout.id,
      method: input.method,
      // Settled by the processor before posd hears of it: one move from the machine's start.
      status: nextState(paymentMachine, initialState(paymentMachine), { type: succeeded ? 'SUCCEED' : 'FAIL' })!,
      amount_in_cents: checkout.amount_in_cents,
      currency: checkout.currency,
      fee_in_cents: fee?.fee_in_cents ?? 0,
      commission_in_cents: fee?.commission_in_cents ?? 0,
      vat_withheld_in_cents: fee?.vat_withheld_in_cents ?? 0,
      customer_id: checkout.customer_id,
      failure_reason: succeeded ? null : (input.failureReason ?? 'declined'),
      card_network: input.card?.network ?? null,
      card_last4: input.card?.last4 ?? null,
      authorization_code: input.authorizationCode ?? null,
      processor_reference: input.processorReference ?? null,
      installments: input.installments ?? null,
      channel: input.channel ?? null,
      balance_transaction_id: txn?.id ?? null,
      tax_invoice_url: null,
      created_at: at,
      updated_at: at,
      payment_method_id: paymentMethodId,
    };
    store.insert(pa);
    // A card paid at a checkout is kept for later charges of the same customer, under the id the
    // checkout answers; a card at a terminal is not (the terminal hands posd no way to charge it again).
    if (succeeded && input.method === 'card' && input.card && !input.paymentMethodId) {
      store.saveCard({
        id: paymentMethodId,
        account_id: account.id,
        live_mode: pa.live_mode,
        customer_id: checkout.customer_id,
        type: 'card',
        card_network: input.card.network,
        card_last4: input.card.last4,
        payment_intent_id: paId,
        created_at: at,
      });
    }

    createIntent(ctx, paymentIntentInput(pa, checkout, succeeded ? 'succeeded' : (input.failureReason ?? 'failed')));

    const settled = setCheckoutStatus(
      ctx,
      account,
      checkout.id,
      { type: succeeded ? 'PAYMENT_SUCCEEDED' : 'PAYMENT_FAILED' },
      {
        latestIntentId: intentId,
        paymentIntentId: paId,
      },
    );
    if (succeeded && account.live_mode && checkout.customer_id) markCustomerLive(ctx, checkout.customer_id);

    const doc = emitPaymentEvents(ctx, account, pa, settled);
    const scope = { accountId: account.id, liveMode: account.live_mode };
    // After the payment's own events: coupons count their redemptions, a paid recurring line starts
    // its subscription (spec 3.5).
    if (succeeded) ctx.registry.checkout.afterPay(ctx, account, settled, { paymentIntentId: paId, card: input.card ?? null, paymentMethodId });
    appendSyncRecord(ctx.db, {
      kind: input.method === 'terminal' ? 'terminal_payment' : 'checkout_payment',
      ...scope,
      createdAt: at,
      payload: { payment_intent: pa, intent: doc, checkout: settled, balance_transaction: txn ?? null },
    });
    return resultOf(pa);
  });
}

/** What the sandbox's processor is told to do (gaps.md test helpers; the sandbox checkout page). */
export interface SandboxPayInput {
  method: 'card' | 'bank_transfer';
  outcome: 'succeeded' | 'failed';
  failureReason?: string;
}

function assertSandbox(account: Account): void {
  // Live money moves only through a terminal or a real processor; callers check first and answer
  // in their own words, this is the last line.
  if (account.live_mode) throw new ApiError('route_not_found', { message: 'Test payments exist only in a sandbox.' });
}

/**
 * A sandbox payment settled as a processor would settle it: the one code behind
 * `POST /test_helpers/checkouts/{id}/pay` and the buttons of the sandbox checkout page.
 */
export function payInSandbox(ctx: AppContext, account: Account, checkoutId: string, input: SandboxPayInput): SettleResult {
  assertSandbox(account);
  const card = input.method === 'card';
  return settleCheckoutPayment(ctx, account, {
    checkoutId,
    method: input.method,
    outcome: input.outcome,
    failureReason: input.outcome === 'failed' ? (input.failureReason ?? (card ? 'card_declined' : 'funds_not_received')) : null,
    card: card ? { network: 'visa', last4: '4242' } : null,
    authorizationCode: card && input.outcome === 'succeeded' ? 'SANDBOX' : null,
    processorReference: card ? null : 'SANDBOX-TRANSFER',
    channel: 'sandbox',
  });
}

/**
 * A sandbox payment that waits before it settles: a card whose bank asks the payer to authenticate
 * (the checkout waits in `needs_payer_authentication`) or a bank transfer the buyer has announced
 * (`payment_in_progress` until the money arrives). `payInSandbox` settles it later; the checkout's
 * machine decides which moves are allowed. Behind `POST /test_helpers/checkouts/{id}/pending` and
 * the sandbox checkout page.
 */
export function holdInSandbox(ctx: AppContext, account: Account, checkoutId: string, method: SandboxPayInput['method'] | 'crypto'): Checkout {
  assertSandbox(account);
  if (method === 'bank_transfer') return startBankTransfer(ctx, account, checkoutId, { channel: 'sandbox' }).checkout;
  if (method === 'crypto') return startCryptoPayment(ctx, account, checkoutId, { channel: 'sandbox' }).checkout;
  return tx(ctx.db, () => {
    const checkout = getCheckout(ctx, account, checkoutId);
    if (!checkout) throw notFound('checkout', checkoutId);
    if (isExpired(ctx, checkout)) throw new ApiError('checkout_expired');
    return setCheckoutStatus(ctx, account, checkoutId, { type: 'REQUIRE_PAYER_AUTHENTICATION' });
  });
}

/**
 * The payer gave up (closed the authentication challenge, or will not send the transfer they
 * announced): the checkout is unpaid again, nothing was charged; a pending transfer is canceled
 * (`intent.canceled`).
 */
export function abandonInSandbox(ctx: AppContext, account: Account, checkoutId: string): Checkout {
  assertSandbox(account);
  return tx(ctx.db, () => {
    const checkout = getCheckout(ctx, account, checkoutId);
    if (!checkout) throw notFound('checkout', checkoutId);
    const waiting = pendingPaymentOf(ctx, checkout);
    // A card stored offline is not the payer's to give up: its outcome comes from the processor.
    if (waiting?.method === 'terminal')
      throw new ApiError('checkout_not_modifiable', { message: 'The checkout waits for a card payment a terminal stored offline.' });
    if (waiting) finishPendingPayment(ctx, account, waiting, { type: 'CANCEL' });
    else setCheckoutStatus(ctx, account, checkoutId, { type: 'ABANDON_PAYMENT' });
    return getCheckout(ctx, account, checkoutId)!;
  });
}

export interface PaymentIntentView {
  id: string;
  account_id: string;
  live_mode: boolean;
  status: string;
  method: string;
  amount_in_cents: number;
  currency: string;
  fee_in_cents: number;
  vat_withheld_in_cents: number;
  checkout_id: string;
  intent_id: string;
  customer_id: string | null;
  failure_reason: string | null;
  card: { network: string | null; last4: string } | null;
  authorization_code: string | null;
  processor_reference: string | null;
  installments: number | null;
  channel: string | null;
  balance_transaction_id: string | null;
  tax_invoice_url: string | null;
  offline: { stored_at: string; forwarded_at: string | null } | null;
  created_at: string;
  updated_at: string;
}

function toView(r: PaymentIntentRow): PaymentIntentView {
  return {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    status: r.status,
    method: r.method,
    amount_in_cents: r.amount_in_cents,
    currency: r.currency,
    fee_in_cents: r.fee_in_cents,
    vat_withheld_in_cents: r.vat_withheld_in_cents,
    checkout_id: r.checkout_id,
    intent_id: r.intent_id,
    customer_id: r.customer_id,
    failure_reason: r.failure_reason,
    card: r.card_last4 ? { network: r.card_network, last4: r.card_last4 } : null,
    authorization_code: r.authorization_code,
    processor_reference: r.processor_reference,
    installments: r.installments,
    channel: r.channel,
    balance_transaction_id: r.balance_transaction_id,
    tax_invoice_url: r.tax_invoice_url,
    offline: offlineMark(r),
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** A stored card handed to its processor (a terminal's forward result), in the caller's transaction. */
export function markPaymentForwarded(ctx: AppContext, paymentIntentId: string, at: string): void {
  paymentsStore(ctx.db).markForwarded(paymentIntentId, at);
}

/** A card saved by a paid checkout of this account and environment (`pay_m_`), or undefined. */
export function savedCard(ctx: AppContext, account: Account, id: string): SavedCardRow | undefined {
  return paymentsStore(ctx.db).savedCard(id, account.id, account.live_mode);
}

/** The payment intent row when it belongs to one of the accounts in that environment. */
export function paymentIntentRow(ctx: AppContext, accountIds: string[], liveMode: boolean, id: string): PaymentIntentRow | undefined {
  const row = paymentsStore(ctx.db).byId(id);
  return row && accountIds.includes(row.account_id) && (row.live_mode === 1) === liveMode ? row : undefined;
}

export function getPaymentIntent(ctx: AppContext, accountIds: string[], liveMode: boolean, id: string): PaymentIntentView | undefined {
  const row = paymentIntentRow(ctx, accountIds, liveMode, id);
  return row ? toView(row) : undefined;
}

/** Records the invoice URL on the payment intent and its unified intent (a DTE issued outside posd). */
export function setPaymentIntentTaxInvoiceUrl(ctx: AppContext, account: Account, id: string, url: string | null): PaymentIntentView {
  return tx(ctx.db, () => {
    const row = paymentIntentRow(ctx, [account.id], account.live_mode, id);
    if (!row) throw notFound('payment intent', id);
    if (row.status !== 'succeeded') throw new ApiError('payment_not_succeeded');
    paymentsStore(ctx.db).setTaxInvoiceUrl(id, url, isoTime(ctx.clock.now()));
    setIntentTaxInvoiceUrl(ctx, row.intent_id, url);
    publishTaxInvoiceUrl(ctx, { id: row.intent_id, account_id: row.account_id, live_mode: row.live_mode }, url);
    return toView(paymentsStore(ctx.db).byId(id)!);
  });
}

/** A tax invoice URL learnt from the central's feed, on the payment intent this box holds (no event). */
export function applyCentralPaymentTaxInvoiceUrl(ctx: AppContext, paymentIntentId: string, url: string | null, at: string): void {
  const store = paymentsStore(ctx.db);
  if (store.byId(paymentIntentId)) store.setTaxInvoiceUrl(paymentIntentId, url, at);
}

// The module's front: the one-time paymentable every legacy payment event carries.
export { oneTimePaymentable } from './legacy.js';
