import { Type } from '@sinclair/typebox';

const Text = (max: number) => Type.Optional(Type.Union([Type.String({ maxLength: max }), Type.Null()]));
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Metadata = Type.Record(Type.String({ maxLength: 40 }), Type.Unknown(), { maxProperties: 50 });

/**
 * The create fields of the hosted service (hosted-api.md section 5) and posd's names for two of
 * them: `full_name`/`name` and `tax_id`/`nit` each name one value.
 */
export const CustomerBody = Type.Object({
  email: Type.Optional(Type.Union([Type.String({ format: 'email', maxLength: 254 }), Type.Null()])),
  full_name: Text(200),
  name: Text(200),
  phone: Text(40),
  tax_id: Text(32),
  nit: Text(32),
  address: Text(500),
  metadata: Type.Optional(Nullable(Metadata)),
});

export const CustomerSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  user_id: Nullable(Type.String()),
  email: Nullable(Type.String()),
  name: Nullable(Type.String()),
  full_name: Nullable(Type.String()),
  phone: Nullable(Type.String()),
  address: Nullable(Type.String()),
  nit: Nullable(Type.String()),
  tax_id: Nullable(Type.String()),
  metadata: Nullable(Type.Record(Type.String(), Type.Unknown())),
  created_at: Type.String(),
});

export const CustomerList = Type.Object({ customers: Type.Array(CustomerSchema) });
