import { Type, type Static } from '@sinclair/typebox';

export const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const ErrorSchema = Type.Object(
  {
    message: Type.String(),
    code: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
    refund_id: Type.Optional(Type.String()),
    endpoint: Type.Optional(Type.String()),
  },
  { $id: 'Error', additionalProperties: true },
);

export const TestResponse = Type.Object({
  message: Type.String(),
  account_id: Type.String(),
  name: Type.String(),
  environment: Type.Union([Type.Literal('live'), Type.Literal('sandbox')]),
  sandbox_id: Type.Union([Type.String(), Type.Null()]),
});

export const AccountSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  tax_id: Type.Union([Type.String(), Type.Null()]),
  tax_name: Type.Union([Type.String(), Type.Null()]),
  country: Type.String(),
  default_currency: Type.String(),
  currencies: Type.Array(Type.String()),
  environment: Type.Union([Type.Literal('live'), Type.Literal('sandbox')]),
  live_mode: Type.Boolean(),
  parent_account_id: Type.Union([Type.String(), Type.Null()]),
  organization_id: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});
export type AccountView = Static<typeof AccountSchema>;

export const BalanceSchema = Type.Object({
  currency: Type.String(),
  available_in_cents: Type.Integer(),
  pending_in_cents: Type.Integer(),
  account_id: Type.Optional(Type.String()),
});

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
