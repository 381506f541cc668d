import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../api/schemas.js';

const Cents = Type.Integer({ minimum: 1, maximum: 100_000_000 });
const DateTime = Type.String({ format: 'date-time' });
const Mode = Type.Union([Type.Literal('code'), Type.Literal('bank'), Type.Literal('custom_bins')]);
const Duration = Type.Union([Type.Literal('once'), Type.Literal('repeating'), Type.Literal('forever')]);

/** Spec 2.7, every field. */
export const CouponSchema = Type.Object({
  id: Type.String(),
  // Which account owns it: an organization key's list aggregates several (spec 5 rule 5).
  account_id: Type.String(),
  name: Type.String(),
  discount_mode: Mode,
  display_name: Nullable(Type.String()),
  amount_off_in_cents: Nullable(Type.Integer()),
  percent_off: Nullable(Type.Number()),
  automatically_applies: Type.Boolean(),
  max_redemptions: Nullable(Type.Integer()),
  times_redeemed: Type.Integer(),
  currency: Nullable(Type.String()),
  duration: Duration,
  duration_in_payments: Nullable(Type.Integer()),
  minimum_amount_in_cents: Nullable(Type.Integer()),
  once_per_customer: Type.Boolean(),
  product_ids: Type.Array(Type.String()),
  starts_at: Nullable(Type.String()),
  expires_at: Nullable(Type.String()),
  status: Type.String(),
  live_mode: Type.Boolean(),
  created_at: Type.String(),
});
export type Coupon = Static<typeof CouponSchema>;

export const CreateCouponBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 64 }),
  discount_mode: Type.Optional(Mode),
  display_name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  amount_off_in_cents: Type.Optional(Nullable(Cents)),
  percent_off: Type.Optional(Nullable(Type.Number({ exclusiveMinimum: 0, maximum: 100 }))),
  currency: Type.Optional(Nullable(Type.Union([Type.Literal('GTQ'), Type.Literal('USD')]))),
  automatically_applies: Type.Optional(Type.Boolean()),
  max_redemptions: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 1_000_000_000 }))),
  duration: Type.Optional(Duration),
  duration_in_payments: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 1000 }))),
  minimum_amount_in_cents: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 100_000_000 }))),
  once_per_customer: Type.Optional(Type.Boolean()),
  product_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 500 })),
  starts_at: Type.Optional(Nullable(DateTime)),
  expires_at: Type.Optional(Nullable(DateTime)),
});
export type CreateCouponInput = Static<typeof CreateCouponBody>;

/**
 * What may change after creation: who may use it and when. The discount itself (amount, percent,
 * currency, mode, duration) is fixed once created, so a redeemed discount never changes meaning.
 */
export const UpdateCouponBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  display_name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  automatically_applies: Type.Optional(Type.Boolean()),
  max_redemptions: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 1_000_000_000 }))),
  minimum_amount_in_cents: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 100_000_000 }))),
  once_per_customer: Type.Optional(Type.Boolean()),
  product_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 500 })),
  starts_at: Type.Optional(Nullable(DateTime)),
  expires_at: Type.Optional(Nullable(DateTime)),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('archived')])),
});
export type UpdateCouponInput = Static<typeof UpdateCouponBody>;

export const CouponStatus = Type.Union(['active', 'scheduled', 'expired', 'exhausted', 'archived', 'all'].map((s) => Type.Literal(s)));
