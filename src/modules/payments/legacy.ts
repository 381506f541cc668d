import type { Checkout } from '../checkouts/service.js';
import type { Customer } from '../customers/service.js';
import { legacyPaymentIntentPayload, type Paymentable } from '../../events/payloads.js';
import type { PaymentIntentRow } from './store.js';

/** Legacy event type of a payment's state, per method (spec 6.2 and 6.4); null where the catalogue has none. */
export function legacyEventType(method: PaymentIntentRow['method'], status: PaymentIntentRow['status']): string | null {
  // The legacy bank-transfer family has no canceled event (spec 6.2: pending, succeeded, failed).
  if (method === 'bank_transfer') return status === 'canceled' ? null : `bank_transfer_intent.${status}`;
  // The legacy catalogue has no failed cash event (spec 6.2 names only cash_intent.succeeded).
  if (method === 'cash') return status === 'succeeded' ? 'cash_intent.succeeded' : null;
  // Spec 6.2's balance and crypto families: a balance charge never waits nor is canceled.
  if (method === 'balance') return status === 'succeeded' || status === 'failed' ? `balance_intent.${status}` : null;
  if (method === 'crypto') return status === 'canceled' ? null : `crypto_intent.${status}`;
  return `payment_intent.${status}`;
}

/**
 * The legacy payload of spec 6.4 (`payment_intent.succeeded` / `.failed`); bank-transfer legacy
 * events use the same shape under their own type. The top-level id is the concrete `pa_` id. Built
 * by the catalogue's own builder, so a test-send has exactly this shape.
 */
export function legacyPaymentPayload(pa: PaymentIntentRow, checkout: Checkout, customer: Customer | undefined, paymentId: string): Record<string, unknown> {
  return legacyPaymentIntentPayload({
    id: pa.id,
    event_type: legacyEventType(pa.method, pa.status) ?? `${pa.method}_intent.${pa.status}`,
    created_at: pa.created_at,
    checkout: {
      id: checkout.id,
      status: checkout.status,
      payment: { id: paymentId, paymentable: oneTimePaymentable(paymentId, customer) },
      payment_method: { id: pa.payment_method_id, type: pa.method, card: pa.card_last4 ? { last4: pa.card_last4, network: pa.card_network ?? '' } : null },
      transfer_setups: checkout.transfer_setups,
      metadata: checkout.metadata,
    },
    failure_reason: pa.failure_reason,
    amount_in_cents: pa.amount_in_cents,
    currency: pa.currency,
    fee: -pa.fee_in_cents,
    vat_withheld: pa.vat_withheld_in_cents,
    vat_withheld_currency: pa.currency,
    customer: customer ? { email: customer.email, full_name: customer.full_name, id: customer.id } : null,
    product_id: checkout.items.find((i) => i.product_id)?.product_id ?? null,
    invoice: { id: pa.intent_id, tax_invoice_url: pa.tax_invoice_url },
  });
}

/** Who paid, as the legacy `paymentable` names them: a one-time payment by the checkout's customer. */
export function oneTimePaymentable(
  paymentId: string,
  customer: (Pick<Customer, 'full_name' | 'tax_id' | 'phone'> & { address?: string | null }) | undefined,
): Paymentable {
  return {
    type: 'OneTimePayment',
    id: paymentId,
    tax_name: customer?.full_name ?? null,
    tax_id: customer?.tax_id ?? null,
    address: customer?.address ?? null,
    phone_number: customer?.phone ?? null,
  };
}
