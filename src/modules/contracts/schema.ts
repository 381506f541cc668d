import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../api/schemas.js';

const FieldKind = Type.Union(['text', 'date', 'document', 'contact', 'checkbox'].map((k) => Type.Literal(k)));

export const TemplateField = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9_]+$' }),
  label: Type.String({ minLength: 1, maxLength: 200 }),
  kind: FieldKind,
  required: Type.Boolean(),
});
export type TemplateFieldT = Static<typeof TemplateField>;

export const CreateTemplateBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  body: Type.String({ minLength: 1, maxLength: 100_000 }),
  signature_required_before: Type.Optional(Type.Union([Type.Literal('confirmation'), Type.Literal('visit'), Type.Literal('none')])),
  signature_valid_for_months: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 120 }))),
  fields: Type.Optional(Type.Array(TemplateField, { maxItems: 50 })),
  service_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 100 })),
});
export type CreateTemplateInput = Static<typeof CreateTemplateBody>;

/** Spec 2.4. */
export const TemplateSchema = Type.Object({
  id: Nullable(Type.String()),
  name: Type.String(),
  body: Type.String(),
  signature_required_before: Type.String(),
  signature_valid_for_months: Nullable(Type.Integer()),
  fields: Type.Array(TemplateField),
  service_ids: Type.Array(Type.String()),
  created_at: Nullable(Type.String()),
});

export const CreateContractBody = Type.Object({
  template_id: Type.String({ minLength: 1, maxLength: 64 }),
  customer_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  customer: Type.Optional(
    Type.Object({
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      phone: Type.Optional(Type.String({ minLength: 3, maxLength: 32 })),
      email: Type.Optional(Type.String({ format: 'email', maxLength: 254 })),
    }),
  ),
  service_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  charge_amount_in_cents: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
  booking_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  sent_via: Type.Optional(Type.Union([Type.Literal('messaging'), Type.Literal('email'), Type.Literal('link')])),
});
export type CreateContractInput = Static<typeof CreateContractBody>;

/** Spec 2.3. */
export const ContractSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  template_id: Type.String(),
  customer: Type.Object({ id: Type.String(), name: Nullable(Type.String()), email: Nullable(Type.String()), phone: Nullable(Type.String()) }),
  booking_id: Nullable(Type.String()),
  checkout_id: Nullable(Type.String()),
  checkout_url: Nullable(Type.String()),
  title: Type.String(),
  status: Type.Union(['sent', 'viewed', 'signed', 'declined', 'expired'].map((s) => Type.Literal(s))),
  sent_via: Nullable(Type.String()),
  signing_url: Type.String(),
  field_values: Type.Record(Type.String(), Type.Union([Type.String(), Type.Boolean()])),
  verified_channel: Nullable(Type.String()),
  body_sha256: Nullable(Type.String()),
  pdf_available: Type.Boolean(),
  viewed_at: Nullable(Type.String()),
  signed_at: Nullable(Type.String()),
  valid_until: Nullable(Type.String()),
  declined_at: Nullable(Type.String()),
  reminder_sent_at: Nullable(Type.String()),
  decline_reason: Nullable(Type.String()),
  created_at: Type.String(),
});
export type Contract = Static<typeof ContractSchema>;
