import { Type, type Static } from '@sinclair/typebox';
import { AccountSchema } from '../accounts/schema.js';
import { Nullable } from '../../api/schemas.js';

const Day = Type.String({ format: 'date' });
const Url = Type.String({ minLength: 1, maxLength: 2000 });

export const DocumentsInput = Type.Object({
  identity_document: Type.Optional(Type.Object({ number: Type.String({ minLength: 1, maxLength: 32 }), expires_on: Day, file_url: Url })),
  tax_registration: Type.Optional(
    Type.Object({ nit: Type.String({ minLength: 1, maxLength: 20 }), legal_name: Type.String({ minLength: 1, maxLength: 300 }), file_url: Url }),
  ),
  proof_of_address: Type.Optional(Type.Object({ address: Type.String({ minLength: 1, maxLength: 500 }), issued_on: Day, file_url: Url })),
});

export const CreateConnectedBody = Type.Object({
  email: Type.String({ format: 'email', maxLength: 254 }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  country: Type.Optional(Type.String({ minLength: 2, maxLength: 2 })),
  default_currency: Type.Optional(Type.Union([Type.Literal('GTQ'), Type.Literal('USD')])),
  documents: Type.Optional(DocumentsInput),
});
export type CreateConnectedInput = Static<typeof CreateConnectedBody>;

const DocumentState = Type.Object({
  status: Type.Union([Type.Literal('accepted'), Type.Literal('rejected')]),
  submitted_at: Type.String(),
  errors: Type.Array(Type.String()),
});

export const VerificationSchema = Type.Object({
  status: Type.Union(['unverified', 'incomplete', 'rejected', 'verified'].map((s) => Type.Literal(s))),
  requirements: Type.Array(Type.String()),
  document_errors: Type.Record(Type.String(), Type.Array(Type.String())),
  documents: Type.Record(Type.String(), DocumentState),
  reviewed_at: Nullable(Type.String()),
  verified_at: Nullable(Type.String()),
});
export type Verification = Static<typeof VerificationSchema>;

export const ConnectedAccountSchema = Type.Composite([AccountSchema, Type.Object({ email: Type.String(), verification: VerificationSchema })]);
export type ConnectedAccount = Static<typeof ConnectedAccountSchema>;

const Mode = Type.Union([Type.Literal('none'), Type.Literal('daily')]);

/** Spec 2.8. */
export const CommissionInvoicingSchema = Type.Object({
  mode: Mode,
  override_mode: Nullable(Mode),
  default_mode: Mode,
  timezone: Type.Literal('America/Guatemala'),
  enabled_at: Nullable(Type.String()),
  disabled_at: Nullable(Type.String()),
});
export type CommissionInvoicing = Static<typeof CommissionInvoicingSchema>;

export const CommissionOverrideBody = Type.Object({ override_mode: Nullable(Mode) });
export const CommissionDefaultBody = Type.Object({ default_mode: Mode });
export const CommissionDefaultSchema = Type.Object({ default_mode: Mode, timezone: Type.Literal('America/Guatemala') });

/** The public state of electronic invoicing: never the provider's credentials. */
export const TaxInvoicingSchema = Type.Object({
  account_id: Type.String(),
  enabled: Type.Boolean(),
  status: Type.Union([Type.Literal('inactive'), Type.Literal('active')]),
  provider: Nullable(Type.String()),
  establishment_code: Nullable(Type.String()),
  tax_id: Nullable(Type.String()),
  activated_at: Nullable(Type.String()),
});
export type TaxInvoicing = Static<typeof TaxInvoicingSchema>;

export const TaxInvoicingBody = Type.Object({
  provider: Type.String({ minLength: 1, maxLength: 64 }),
  establishment_code: Type.String({ minLength: 1, maxLength: 32 }),
  username: Type.String({ minLength: 1, maxLength: 200 }),
  api_key: Type.String({ minLength: 1, maxLength: 500 }),
});
export type TaxInvoicingInput = Static<typeof TaxInvoicingBody>;

export const CommissionInvoiceSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  day: Type.String(),
  currency: Type.String(),
  commission_in_cents: Type.Integer(),
  vat_in_cents: Type.Integer(),
  total_in_cents: Type.Integer(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('issued'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  document_id: Nullable(Type.String()),
  url: Nullable(Type.String()),
  last_error: Nullable(Type.String()),
  created_at: Type.String(),
});
