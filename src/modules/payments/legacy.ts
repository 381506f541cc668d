import type { Checkout } from '../checkouts/service.js';
import type { Customer } from '../customers/service.js';
import { LEGACY_API_VERSION } from '../../events/formats.js';
import type { PaymentIntentRow } from './store.js';

/** Legacy event type of a settled payment, per method (spec 6.2 and 6.4). */
export function legacyEventType(method: PaymentIntentRow['method'], status: 'succeeded' | 'failed'): string | null {
  if (method === 'bank_transfer') return `bank_transfer_intent.${status}`;
  // The legacy catalogue has no failed cash event (spec 6.2 names only cash_intent.succeeded).
  if (method === 'cash') return status === 'succeeded' ? 'cash_intent.succeeded' : null;
  return `payment_intent.${status}`;
}

/**
 * The legacy payload of spec 6.4 (`payment_intent.succeeded` / `.failed`); bank-transfer legacy
 * events use the same shape under their own type. The top-level id is the concrete `pa_` id.
 */
export function legacyPaymentPayload(
  pa: PaymentIntentRow,
  checkout: Checkout,
  customer: Customer | undefined,
  paymentId: string,
): Record<string, unknown> {
  const eventType = legacyEventType(pa.method, pa.status) ?? `${pa.method}_intent.${pa.status}`;
  const productId = checkout.items.find((i) => i.product_id)?.product_id ?? null;
  const common = {
    id: pa.id,
    event_type: eventType,
    api_version: LEGACY_API_VERSION,
    created_at: pa.created_at,
    failure_reason: pa.failure_reason,
    amount_in_cents: pa.amount_in_cents,
    currency: pa.currency,
    fee: -pa.fee_in_cents,
    vat_withheld: pa.vat_withheld_in_cents,
    vat_withheld_currency: pa.currency,
    customer: customer ? { email: customer.email, full_name: customer.full_name, id: customer.id } : null,
    product: productId ? { id: productId } : null,
  };
  if (pa.status === 'failed') return { ...common, checkout: { id: checkout.id } };
  return {
    ...common,
    checkout: {
      id: checkout.id,
      status: checkout.status,
      payment: {
        id: paymentId,
        paymentable: {
          type: 'OneTimePayment',
          id: paymentId,
          tax_name: customer?.full_name ?? null,
          tax_id: customer?.tax_id ?? null,
          address: null,
          phone_number: customer?.phone ?? null,
        },
      },
      payment_method: {
        id: pa.id,
        type: pa.method,
        card: pa.card_last4 ? { last4: pa.card_last4, network: pa.card_network } : null,
      },
      transfer_setups: [],
      metadata: checkout.metadata,
    },
    invoice: { id: pa.intent_id, tax_invoice_url: pa.tax_invoice_url },
  };
}
