import { Type, type Static } from '@sinclair/typebox';

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
