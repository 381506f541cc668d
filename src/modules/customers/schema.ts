import { Type } from '@sinclair/typebox';

const Text = (max: number) => Type.Optional(Type.Union([Type.String({ maxLength: max }), Type.Null()]));

export const CustomerBody = Type.Object({
  email: Type.Optional(Type.Union([Type.String({ format: 'email', maxLength: 254 }), Type.Null()])),
  full_name: Text(200),
  name: Text(200),
  phone: Text(40),
  tax_id: Text(32),
});

export const CustomerSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  email: Type.Union([Type.String(), Type.Null()]),
  full_name: Type.Union([Type.String(), Type.Null()]),
  phone: Type.Union([Type.String(), Type.Null()]),
  tax_id: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
});

export const CustomerList = Type.Object({ customers: Type.Array(CustomerSchema) });
