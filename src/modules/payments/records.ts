import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import type { Checkout } from '../checkouts/schema.js';
import { customerById } from '../customers/service.js';
import { intentDocument, type CreateIntentInput, type IntentDocument } from '../intents/service.js';
import { balanceDetails, bankTransferDetails, cryptoDetails, paymentDetails } from '../../events/payloads.js';
import { legacyEventType, legacyPaymentPayload } from './legacy.js';
import type { PaymentStatus } from './machine.js';
import type { PaymentIntentRow } from './store.js';
import { offlineMark } from './offline-mark.js';
import { postBalanceTransaction, type BalanceTransaction, type Fee } from '../ledger/service.js';

/** What every way of settling a payment answers, and what each writes and emits (service.ts, bank-transfers.ts). */

export interface SettleResult {
  intentId: string;
  paymentIntentId: string;
  balanceTransactionId: string | null;
  status: PaymentStatus;
}

export function resultOf(pa: PaymentIntentRow): SettleResult {
  return { intentId: pa.intent_id, paymentIntentId: pa.id, balanceTransactionId: pa.balance_transaction_id, status: pa.status };
}

const INTENT_TYPE: Record<PaymentIntentRow['method'], 'payment' | 'bank_transfer' | 'cash' | 'balance' | 'crypto'> = {
  card: 'payment',
  terminal: 'payment',
  bank_transfer: 'bank_transfer',
  cash: 'cash',
  balance: 'balance',
  crypto: 'crypto',
};

/** The network crypto payments are received on (docs/events.md "Crypto payments"). */
export const CRYPTO_NETWORK = 'ethereum';

/**
 * The unified intent (in_) of a payment intent: what `settleCheckoutPayment` records, and what the
 * central records again with the store's ids when the payment arrives by sync.
 */
export function paymentIntentInput(
  pa: PaymentIntentRow,
  checkout: Pick<Checkout, 'id' | 'items'>,
  rawStatus: string,
  at: { paymentId?: string; createdAt?: string } = {},
  opts: { payerAccountId?: string } = {},
): CreateIntentInput {
  const type = INTENT_TYPE[pa.method];
  // The catalogue's builders: the test-send's examples come out of the same ones.
  const fees = { fee: -pa.fee_in_cents, vat_withheld: pa.vat_withheld_in_cents, vat_withheld_currency: pa.currency };
  const details =
    type === 'bank_transfer'
      ? bankTransferDetails({ failure_reason: pa.failure_reason, bank_reference: pa.processor_reference, sender_comment: null })
      : type === 'crypto'
        ? cryptoDetails({ failure_reason: pa.failure_reason, network: CRYPTO_NETWORK, transaction_hash: pa.processor_reference, ...fees })
        : type === 'balance'
          ? balanceDetails({ failure_reason: pa.failure_reason, ...fees, payer_account_id: opts.payerAccountId ?? '', merchant_account_id: pa.account_id })
          : paymentDetails({
              failure_reason: pa.failure_reason,
              fee: -pa.fee_in_cents,
              tax_invoicing_fee: 0,
              vat_withheld: pa.vat_withheld_in_cents,
              vat_withheld_currency: pa.currency,
              // A saved card charged without the buyer: a one-time payment or a subscription's renewal.
              used_presaved_payment_method: pa.channel === 'one_time_payment' || pa.channel === 'subscription',
              installments: pa.installments ?? 1,
              channel: pa.channel ?? pa.method,
              products: checkout.items.filter((i) => i.product_id).map((i) => ({ id: i.product_id!, quantity: i.quantity })),
            });
  // A card taken offline says so in its intent for good (accounting, disputes): like Stripe's card_present.offline.
  const mark = offlineMark(pa);
  if (mark) details.offline = mark;
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
 * The events of a payment's state, inside its transaction: `intent.<status>` always, its legacy
 * twin (`payment_intent.*`, `bank_transfer_intent.*`) for accounts that still receive both formats
 * (spec 6.3) when the legacy catalogue has one. Returns the unified document.
 */
export function emitPaymentEvents(ctx: AppContext, account: Account, pa: PaymentIntentRow, checkout: Checkout): IntentDocument {
  const doc = intentDocument(ctx, pa.intent_id)!;
  const scope = { accountId: account.id, liveMode: account.live_mode };
  ctx.outbox.emit({ ...scope, type: `intent.${pa.status}`, payload: doc, objectId: pa.intent_id });
  const legacyType = legacyEventType(pa.method, pa.status);
  if (account.event_format === 'both' && legacyType) {
    const customer = checkout.customer_id ? customerById(ctx, checkout.customer_id) : undefined;
    ctx.outbox.emit({ ...scope, type: legacyType, payload: legacyPaymentPayload(pa, checkout, customer, doc.payment.id), objectId: pa.id });
  }
  return doc;
}

/**
 * `automated_bank_transfer_intent.succeeded` (spec 6.2: no unified replacement, so every account
 * gets it, whatever its event format): a bank transfer the bank's automated notice matched to its
 * checkout (by the reference the payer gave), rather than one recorded by hand. Same legacy shape
 * as `bank_transfer_intent.succeeded`, under its own type. Inside the arrival's transaction.
 */
export function emitAutomatedTransferReceived(ctx: AppContext, account: Account, pa: PaymentIntentRow, checkout: Checkout): void {
  const doc = intentDocument(ctx, pa.intent_id)!;
  const customer = checkout.customer_id ? customerById(ctx, checkout.customer_id) : undefined;
  const type = 'automated_bank_transfer_intent.succeeded';
  const payload = { ...legacyPaymentPayload(pa, checkout, customer, doc.payment.id), event_type: type };
  ctx.outbox.emit({ accountId: account.id, liveMode: account.live_mode, type, payload, objectId: pa.id });
}

/**
 * The merchant's ledger `charge` of a settled payment, with its fee: what a card, bank-transfer,
 * crypto or balance payment of a checkout posts. Inside the payment's transaction.
 */
export function postPaymentCharge(
  ctx: AppContext,
  account: Account,
  payment: { id: string; amountInCents: number; currency: string; description: string },
  fee: Fee,
): BalanceTransaction {
  return postBalanceTransaction(ctx, {
    accountId: account.id,
    liveMode: account.live_mode,
    type: 'charge',
    amountInCents: payment.amountInCents,
    feeInCents: fee.fee_in_cents,
    feeDetails: { commission_in_cents: fee.commission_in_cents, vat_withheld_in_cents: fee.vat_withheld_in_cents },
    currency: payment.currency,
    sourceId: payment.id,
    sourceType: 'payment_intent',
    description: payment.description,
  });
}

/** What a checkout's items read as on a ledger row. */
export function chargeDescription(checkout: Pick<Checkout, 'items'>): string {
  return checkout.items
    .map((i) => i.name)
    .join(', ')
    .slice(0, 200);
}
