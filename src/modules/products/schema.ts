import { Type, type Static } from '@sinclair/typebox';
import { AmountSchema, CurrencySchema } from '../../money.js';

export const TaxCategory = Type.Union([Type.Literal('good'), Type.Literal('service')]);
const Interval = Type.Union(['day', 'week', 'month', 'year'].map((i) => Type.Literal(i)));
const Metadata = Type.Record(Type.String(), Type.Unknown());
const NullableString = (max: number) => Type.Union([Type.String({ maxLength: max }), Type.Null()]);

export const PriceInput = Type.Object({
  amount_in_cents: AmountSchema,
  currency: CurrencySchema,
  charge_type: Type.Optional(Type.Union([Type.Literal('one_time'), Type.Literal('recurring')], { default: 'one_time' })),
  billing_interval: Type.Optional(Interval),
  billing_interval_count: Type.Optional(Type.Integer({ minimum: 1, maximum: 365 })),
  /** Recurring prices only: the subscription starts with a free trial this long (spec 6.4). */
  // The hosted service answers "no trial" as `""` and 0; a client sending them back means no trial.
  free_trial_interval: Type.Optional(Type.Union([Interval, Type.Literal(''), Type.Null()])),
  free_trial_interval_count: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 365 }), Type.Null()])),
  /** Recurring prices only (hosted section 4): the subscription ends by itself after this many paid periods. */
  periods_before_automatic_cancellation: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 1000 }), Type.Null()])),
  /** Recurring prices only (hosted section 4): a cancel before this many paid periods is refused (422 `subscription_minimum_term`). */
  periods_before_allowed_to_cancel: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 1000 }), Type.Null()])),
});
export type PriceInput = Static<typeof PriceInput>;

const Requirement = Type.Union([Type.Literal('required'), Type.Literal('optional'), Type.Literal('none')]);

/**
 * The hosted service's checkout-page settings of a product (its reference, "Crear un producto"):
 * where the page sends the buyer after paying or cancelling, and what it asks of them.
 */
export const PageSettings = {
  success_url: Type.Optional(NullableString(2000)),
  cancel_url: Type.Optional(NullableString(2000)),
  image_url: Type.Optional(NullableString(2000)),
  custom_terms_and_conditions: Type.Optional(NullableString(5000)),
  phone_requirement: Type.Optional(Requirement),
  address_requirement: Type.Optional(Requirement),
  billing_info_requirement: Type.Optional(Requirement),
  adjustable_quantity: Type.Optional(Type.Boolean()),
};
export const PAGE_SETTING_DEFAULTS = {
  success_url: null,
  cancel_url: null,
  image_url: null,
  custom_terms_and_conditions: null,
  phone_requirement: 'none',
  address_requirement: 'none',
  billing_info_requirement: 'optional',
  adjustable_quantity: true,
} as const;

/** Flat; the wrapped `{"product": {...}}` form is unwrapped by src/api/body-forms.ts. */
export const CreateProductBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Optional(NullableString(2000)),
  tax_category: Type.Optional(TaxCategory),
  metadata: Type.Optional(Metadata),
  ...PageSettings,
  prices_attributes: Type.Array(PriceInput, { minItems: 1, maxItems: 20 }),
});
export type CreateProductBody = Static<typeof CreateProductBody>;

export const UpdateProductBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  description: Type.Optional(NullableString(2000)),
  tax_category: Type.Optional(TaxCategory),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('archived')])),
  metadata: Type.Optional(Metadata),
  ...PageSettings,
  /** New prices are added; a product's existing prices never change (checkouts refer to them). */
  prices_attributes: Type.Optional(Type.Array(PriceInput, { maxItems: 20 })),
});
export type UpdateProductBody = Static<typeof UpdateProductBody>;

export const PriceSchema = Type.Object({
  id: Type.String(),
  product_id: Type.String(),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  charge_type: Type.String(),
  billing_interval: Type.Union([Type.String(), Type.Null()]),
  billing_interval_count: Type.Union([Type.Integer(), Type.Null()]),
  free_trial_interval: Type.Union([Type.String(), Type.Null()]),
  free_trial_interval_count: Type.Union([Type.Integer(), Type.Null()]),
  periods_before_automatic_cancellation: Type.Union([Type.Integer(), Type.Null()]),
  periods_before_allowed_to_cancel: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Type.String(),
});

export const ProductSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  tax_category: TaxCategory,
  status: Type.String(),
  metadata: Metadata,
  success_url: Type.Union([Type.String(), Type.Null()]),
  cancel_url: Type.Union([Type.String(), Type.Null()]),
  image_url: Type.Union([Type.String(), Type.Null()]),
  custom_terms_and_conditions: Type.Union([Type.String(), Type.Null()]),
  phone_requirement: Requirement,
  address_requirement: Requirement,
  billing_info_requirement: Requirement,
  adjustable_quantity: Type.Boolean(),
  prices: Type.Array(PriceSchema),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type Product = Static<typeof ProductSchema>;
export type Price = Static<typeof PriceSchema>;
