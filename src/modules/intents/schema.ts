import { Type } from '@sinclair/typebox';

const S = Type.String();
const NS = Type.Union([Type.String(), Type.Null()]);

/** Spec 6.1: the envelope, the payment data and `details` (free-form per type). */
export const IntentDocumentSchema = Type.Object({
  id: S,
  type: S,
  event_type: S,
  status: S,
  raw_status: S,
  legacy_id: S,
  receipt_number: Type.Integer(),
  api_version: S,
  account_id: S,
  live_mode: Type.Boolean(),
  created_at: S,
  customer_id: NS,
  user_id: NS,
  customer: Type.Union([Type.Object({ id: S, email: NS, full_name: NS, nit: NS, phone: NS }), Type.Null()]),
  amount_in_cents: Type.Integer(),
  currency: S,
  product: Type.Union([Type.Object({ id: S }), Type.Null()]),
  tax_invoice_url: NS,
  checkout: Type.Union([Type.Object({ id: S, status: S, metadata: Type.Record(Type.String(), Type.Unknown()) }), Type.Null()]),
  payment: Type.Object({ id: S }),
  details: Type.Record(Type.String(), Type.Unknown()),
});
