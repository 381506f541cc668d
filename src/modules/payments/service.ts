import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { ApiError, notFound } from '../../errors.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import type { Account } from '../../accounts/service.js';
import { getCheckout, isExpired, setCheckoutStatus } from '../checkouts/service.js';
import { customerById, markCustomerLive } from '../customers/service.js';
import { feeFor, postBalanceTransaction } from '../ledger/service.js';
import { createIntent, setIntentTaxInvoiceUrl, type CreateIntentInput } from '../intents/service.js';
import type { Checkout } from '../checkouts/schema.js';
import { intentDocument } from '../intents/service.js';
import { legacyEventType, legacyPaymentPayload } from './legacy.js';
import { paymentsStore, type PaymentIntentRow } from './store.js';
import { publishTaxInvoiceUrl } from '../tax-invoices/service.js';
import { bankTransferDetails, paymentDetails } from '../../events/payloads.js';

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
}

export interface SettleResult {
  intentId: string;
  paymentIntentId: string;
  balanceTransactionId: string | null;
  status: 'succeeded' | 'failed';
}

function resultOf(pa: PaymentIntentRow): SettleResult {
  return { intentId: pa.intent_id, paymentIntentId: pa.id, balanceTransactionId: pa.balance_transaction_id, status: pa.status };
}

const INTENT_TYPE: Record<PaymentMethod, 'payment' | 'bank_transfer' | 'cash'> = {
  card: 'payment',
  terminal: 'payment',
  bank_transfer: 'bank_transfer',
  cash: 'cash',
};

/**
 * The unified intent (in_) of a payment intent: what `settleCheckoutPayment` records, and what the
 * central records again with the store's ids when the payment arrives by sync.
 */
export function paymentIntentInput(
  pa: PaymentIntentRow,
  checkout: Pick<Checkout, 'id' | 'items'>,
  rawStatus: string,
  at: { paymentId?: string; createdAt?: string } = {},
): CreateIntentInput {
  const type = INTENT_TYPE[pa.method];
  // The catalogue's builders: the test-send's examples come out of the same ones.
  const details =
    type === 'bank_transfer'
      ? bankTransferDetails({ failure_reason: pa.failure_reason, bank_reference: pa.processor_reference, sender_comment: null })
      : paymentDetails({
          failure_reason: pa.failure_reason,
          fee: -pa.fee_in_cents,
          tax_invoicing_fee: 0,
          vat_withheld: pa.vat_withheld_in_cents,
          vat_withheld_currency: pa.currency,
          used_presaved_payment_method: false,
          installments: pa.installments ?? 1,
          channel: pa.channel ?? pa.method,
          products: checkout.items.filter((i) => i.product_id).map((i) => ({ id: i.product_id!, quantity: i.quantity })),
        });
  return {
    id: pa.intent_id,
    accountId: pa.account_id,
    liveMode: pa.live_mode === 1,
    type,
    status: pa.status,
    rawStatus,
    legacyId: pa.id,
    amountInCents: pa.amount_in_cents,
    currency: pa.currency,
    customerId: pa.customer_id,
    checkoutId: checkout.id,
    details,
    paymentId: at.paymentId,
    createdAt: at.createdAt,
  };
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
    const fee = succeeded && input.method !== 'cash' ? feeFor(account, checkout.amount_in_cents, ctx.config.money) : undefined;

    const txn = fee
      ? postBalanceTransaction(ctx, {
          accountId: account.id,
          liveMode: account.live_mode,
          type: 'charge',
          amountInCents: checkout.amount_in_cents,
          feeInCents: fee.fee_in_cents,
          feeDetails: { commission_in_cents: fee.commission_in_cents, vat_withheld_in_cents: fee.vat_withheld_in_cents },
          currency: checkout.currency,
          sourceId: paId,
          sourceType: 'payment_intent',
          description: checkout.items.map((i) => i.name).join(', ').slice(0, 200),
        })
      : undefined;

    const pa: PaymentIntentRow = {
      id: paId,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      intent_id: intentId,
      checkout_id: checkout.id,
      method: input.method,
      status: input.outcome,
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
    };
    store.insert(pa);

    createIntent(ctx, paymentIntentInput(pa, checkout, succeeded ? 'succeeded' : (input.failureReason ?? 'failed')));

    const settled = setCheckoutStatus(ctx, account, checkout.id, { type: succeeded ? 'PAYMENT_SUCCEEDED' : 'PAYMENT_FAILED' }, {
      latestIntentId: intentId,
      paymentIntentId: paId,
    });
    if (succeeded && account.live_mode && checkout.customer_id) markCustomerLive(ctx, checkout.customer_id);

    const doc = intentDocument(ctx, intentId)!;
    const scope = { accountId: account.id, liveMode: account.live_mode };
    ctx.outbox.emit({ ...scope, type: `intent.${input.outcome}`, payload: doc, objectId: intentId });
    const legacyType = legacyEventType(input.method, input.outcome);
    if (account.event_format === 'both' && legacyType) {
      const customer = checkout.customer_id ? customerById(ctx, checkout.customer_id) : undefined;
      ctx.outbox.emit({
        ...scope,
        type: legacyType,
        payload: legacyPaymentPayload(pa, settled, customer, doc.payment.id),
        objectId: paId,
      });
    }
    // After the payment's own events: coupons count their redemptions, a paid recurring line starts
    // its subscription (spec 3.5).
    if (succeeded) ctx.registry.checkout.afterPay(ctx, account, settled, { paymentIntentId: paId, card: input.card ?? null });
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
export function holdInSandbox(ctx: AppContext, account: Account, checkoutId: string, method: SandboxPayInput['method']): Checkout {
  assertSandbox(account);
  return tx(ctx.db, () => {
    const checkout = getCheckout(ctx, account, checkoutId);
    if (!checkout) throw notFound('checkout', checkoutId);
    if (isExpired(ctx, checkout)) throw new ApiError('checkout_expired');
    return setCheckoutStatus(ctx, account, checkoutId, { type: method === 'card' ? 'REQUIRE_PAYER_AUTHENTICATION' : 'START_PAYMENT' });
  });
}

/** The payer closed the authentication challenge: the checkout is unpaid again, nothing was charged. */
export function abandonInSandbox(ctx: AppContext, account: Account, checkoutId: string): Checkout {
  assertSandbox(account);
  return setCheckoutStatus(ctx, account, checkoutId, { type: 'ABANDON_PAYMENT' });
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
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
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
