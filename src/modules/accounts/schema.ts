import { Type } from '@sinclair/typebox';

export const TestResponse = Type.Object({
  message: Type.String(),
  account_id: Type.String(),
  name: Type.String(),
  environment: Type.Union([Type.Literal('live'), Type.Literal('sandbox')]),
  sandbox_id: Type.Union([Type.String(), Type.Null()]),
});

export { AccountSchema, type AccountView } from '../../accounts/view.js';

export const BalanceSchema = Type.Object({
  currency: Type.String(),
  available_in_cents: Type.Integer(),
  pending_in_cents: Type.Integer(),
  account_id: Type.Optional(Type.String()),
});
