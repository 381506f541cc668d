import type { AppContext } from '../../context.js';
import { customerById } from '../customers/service.js';
import { getCheckoutIn } from '../checkouts/service.js';
import { unifiedIntentPayload, type IntentStatus, type UnifiedIntentPayload } from '../../events/payloads.js';
// The store, not service.ts: service.ts re-exports this file as the module's front.
import { intentsStore } from './store.js';

export type IntentDocument = UnifiedIntentPayload;

/**
 * The unified intent document (spec 6.1): envelope, payment data and the details of its type. The
 * `intent.*` event payload and `GET /intents/{id}` are both this document, built from the current
 * state (so a later tax invoice URL shows here).
 */
export function intentDocument(ctx: AppContext, intentId: string): IntentDocument | undefined {
  const row = intentsStore(ctx.db).byId(intentId);
  if (!row) return undefined;
  const liveMode = row.live_mode === 1;
  const customer = row.customer_id ? customerById(ctx, row.customer_id) : undefined;
  const details = JSON.parse(row.details) as Record<string, unknown>;
  // The payer's side of a balance payment (`intent.paid`) shows the merchant's checkout it paid.
  const owners = row.type === 'balance' && typeof details.merchant_account_id === 'string' ? [row.account_id, details.merchant_account_id] : [row.account_id];
  const checkout = row.checkout_id ? getCheckoutIn(ctx, owners, liveMode, row.checkout_id) : undefined;
  const productId = checkout?.items.find((i) => i.product_id)?.product_id ?? null;
  return unifiedIntentPayload({
    account_id: row.account_id,
    live_mode: liveMode,
    kind: row.type,
    status: row.status as IntentStatus,
    raw_status: row.raw_status,
    id: row.id,
    legacy_id: row.legacy_id,
    receipt_number: row.receipt_number,
    created_at: row.created_at,
    customer_id: row.customer_id,
    user_id: null,
    customer: customer ? { id: customer.id, email: customer.email, full_name: customer.full_name, nit: customer.tax_id, phone: customer.phone } : null,
    amount_in_cents: row.amount_in_cents,
    currency: row.currency,
    product_id: productId,
    tax_invoice_url: row.tax_invoice_url,
    checkout: checkout ? { id: checkout.id, status: checkout.status, metadata: checkout.metadata } : null,
    payment_id: row.payment_id,
    details,
  });
}
