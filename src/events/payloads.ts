import { newId } from '../ids.js';
import { LEGACY_API_VERSION, UNIFIED_API_VERSION } from './formats.js';

/**
 * Payload builders. The unified `intent.*` envelope (spec 6.1) and the legacy shapes (spec 6.4) are
 * built from plain data here so that emitters (cash sales, terminal payments, checkouts) and the
 * test-send endpoint produce the same shapes. Field order follows the spec's listing.
 */

export type IntentKind = 'payment' | 'bank_transfer' | 'crypto' | 'balance' | 'cash';
export type IntentStatus = 'pending' | 'succeeded' | 'failed' | 'canceled' | 'paid';

export interface PayloadCustomer {
  id: string;
  email: string | null;
  full_name: string | null;
  nit: string | null;
  phone: string | null;
}

export interface UnifiedIntentInput {
  account_id: string;
  live_mode: boolean;
  kind: IntentKind;
  status: IntentStatus;
  raw_status?: string;
  /** Canonical id (`in_...`). */
  id: string;
  /** Id of the same charge in the per-method event (`pa_`, `ca_`, ...). */
  legacy_id: string;
  receipt_number: number;
  created_at: string;
  customer_id: string | null;
  user_id: string | null;
  customer: PayloadCustomer | null;
  amount_in_cents: number;
  currency: string;
  product_id: string | null;
  tax_invoice_url: string | null;
  /** The checkout's `metadata` too: every shop finds its order through it (hosted-api.md section 2, 16). */
  checkout: { id: string; status: string; metadata: Record<string, unknown> } | null;
  payment_id: string;
  details: Record<string, unknown>;
}

/** The unified intent document: every `intent.*` payload and `GET /intents/{id}`. */
export type UnifiedIntentPayload = {
  id: string;
  type: string;
  event_type: string;
  status: string;
  raw_status: string;
  legacy_id: string;
  receipt_number: number;
  api_version: string;
  account_id: string;
  live_mode: boolean;
  created_at: string;
  customer_id: string | null;
  user_id: string | null;
  customer: PayloadCustomer | null;
  amount_in_cents: number;
  currency: string;
  product: { id: string } | null;
  tax_invoice_url: string | null;
  /** The checkout's `metadata` too: every shop finds its order through it (hosted-api.md section 2, 16). */
  checkout: { id: string; status: string; metadata: Record<string, unknown> } | null;
  payment: { id: string };
  details: Record<string, unknown>;
};

/**
 * The unified envelope of spec 6.1 (plus the intent's `account_id` and `live_mode`); the intents
 * module builds `GET /intents/{id}` and every `intent.*` event with it, the test-send its examples.
 */
export function unifiedIntentPayload(i: UnifiedIntentInput): UnifiedIntentPayload {
  return {
    type: i.kind,
    event_type: `intent.${i.status}`,
    status: i.status,
    raw_status: i.raw_status ?? i.status,
    id: i.id,
    legacy_id: i.legacy_id,
    receipt_number: i.receipt_number,
    api_version: UNIFIED_API_VERSION,
    account_id: i.account_id,
    live_mode: i.live_mode,
    created_at: i.created_at,
    customer_id: i.customer_id,
    user_id: i.user_id,
    customer: i.customer,
    amount_in_cents: i.amount_in_cents,
    currency: i.currency,
    product: i.product_id ? { id: i.product_id } : null,
    tax_invoice_url: i.tax_invoice_url,
    checkout: i.checkout,
    payment: { id: i.payment_id },
    details: i.details,
  };
}

/** `details` of a `bank_transfer` intent: the bank's reference and the sender's comment (spec 6.1). */
export function bankTransferDetails(d: {
  failure_reason: string | null;
  bank_reference: string | null;
  sender_comment: string | null;
}): Record<string, unknown> {
  return { failure_reason: d.failure_reason, bank_reference: d.bank_reference, sender_comment: d.sender_comment };
}

/**
 * `details` of a `balance` intent (paid from another posd account's balance): the charge's fee on
 * the merchant's side (0 on the payer's `intent.paid`), and the two accounts. The spec lists no
 * fields for it; posd's choice, docs/events.md.
 */
export function balanceDetails(d: {
  failure_reason: string | null;
  fee: number;
  vat_withheld: number;
  vat_withheld_currency: string;
  payer_account_id: string;
  merchant_account_id: string;
}): Record<string, unknown> {
  return {
    failure_reason: d.failure_reason,
    fee: d.fee,
    vat_withheld: d.vat_withheld,
    vat_withheld_currency: d.vat_withheld_currency,
    payer_account_id: d.payer_account_id,
    merchant_account_id: d.merchant_account_id,
  };
}

/**
 * `details` of a `crypto` intent: the network and the on-chain transaction (null while it waits),
 * the fee once it succeeded. The spec lists no fields for it; posd's choice, docs/events.md.
 */
export function cryptoDetails(d: {
  failure_reason: string | null;
  network: string;
  transaction_hash: string | null;
  fee: number;
  vat_withheld: number;
  vat_withheld_currency: string;
}): Record<string, unknown> {
  return {
    failure_reason: d.failure_reason,
    network: d.network,
    transaction_hash: d.transaction_hash,
    fee: d.fee,
    vat_withheld: d.vat_withheld,
    vat_withheld_currency: d.vat_withheld_currency,
  };
}

/** `details` of a `payment` (card) intent, spec 6.1. */
export function paymentDetails(d: {
  failure_reason?: string | null;
  fee: number;
  tax_invoicing_fee?: number;
  vat_withheld: number;
  vat_withheld_currency: string;
  used_presaved_payment_method?: boolean;
  installments?: number | null;
  channel: string;
  products: Array<{ id: string; quantity: number }>;
}): Record<string, unknown> {
  return {
    failure_reason: d.failure_reason ?? null,
    fee: d.fee,
    tax_invoicing_fee: d.tax_invoicing_fee ?? 0,
    vat_withheld: d.vat_withheld,
    vat_withheld_currency: d.vat_withheld_currency,
    used_presaved_payment_method: d.used_presaved_payment_method ?? false,
    installments: d.installments ?? null,
    channel: d.channel,
    products: d.products,
  };
}

export interface Paymentable {
  type: string;
  id: string;
  tax_name: string | null;
  tax_id: string | null;
  address: string | null;
  phone_number: string | null;
}

export interface LegacyPaymentIntentInput {
  /** `pa_...` (or the per-method id: `ca_` for cash, ...). */
  id: string;
  event_type: string;
  created_at: string;
  checkout: {
    id: string;
    status: string;
    payment: { id: string; paymentable: Paymentable } | null;
    payment_method: { id: string; type: string; card: { last4: string; network: string } | null } | null;
    transfer_setups: unknown[];
    metadata: Record<string, unknown>;
  };
  failure_reason: string | null;
  amount_in_cents: number;
  currency: string;
  fee: number;
  vat_withheld: number;
  vat_withheld_currency: string;
  customer: { email: string | null; full_name: string | null; id: string } | null;
  product_id: string | null;
  invoice: { id: string | null; tax_invoice_url: string | null };
}

/**
 * Legacy per-method payloads (spec 6.4). A success carries the full checkout (payment, method,
 * metadata) and the invoice; a failure carries only the checkout id and no invoice, exactly as the
 * spec lists `payment_intent.failed`. Other per-method events use the same two shapes.
 */
export function legacyPaymentIntentPayload(i: LegacyPaymentIntentInput): Record<string, unknown> {
  const failed = !i.event_type.endsWith('.succeeded');
  const common = {
    id: i.id,
    event_type: i.event_type,
    api_version: LEGACY_API_VERSION,
  };
  const money = {
    created_at: i.created_at,
    failure_reason: i.failure_reason,
    amount_in_cents: i.amount_in_cents,
    currency: i.currency,
    fee: i.fee,
    vat_withheld: i.vat_withheld,
    vat_withheld_currency: i.vat_withheld_currency,
    customer: i.customer,
    product: { id: i.product_id },
  };
  if (failed) return { ...common, checkout: { id: i.checkout.id }, ...money };
  return { ...common, checkout: i.checkout, ...money, invoice: i.invoice };
}

// ---- Example data for the test-send endpoint (spec 6.6's testing tab) ----

export function exampleCustomer(): PayloadCustomer {
  return { id: newId('cus'), email: 'ana.lopez@example.com', full_name: 'Ana López', nit: 'CF', phone: '+50255550123' };
}

export function examplePaymentable(): Paymentable {
  return {
    type: 'Customer',
    id: newId('cus'),
    tax_name: 'Ana López',
    tax_id: 'CF',
    address: '6a Avenida 12-34, Zona 1, Guatemala',
    phone_number: '+50255550123',
  };
}
