import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../api/pagination.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const ActivitySchema = Type.Object({
  id: Type.String(),
  type: Type.String(),
  model: Type.String(),
  object_id: NullableString,
  amount_in_cents: Type.Union([Type.Integer(), Type.Null()]),
  currency: NullableString,
  description: NullableString,
  created_at: Type.String({ format: 'date-time' }),
  /** Only on organization-wide reads, where rows of several accounts mix. */
  account_id: Type.Optional(Type.String()),
});
export type Activity = Static<typeof ActivitySchema>;

export const ActivityQuery = Type.Object({
  ...PageQuery,
  type: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z][a-z0-9_]*(\\.[a-z0-9_]+)*$' })),
  from_time: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  until_time: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});
export type ActivityQueryInput = Static<typeof ActivityQuery>;
