import { Type, type Static } from '@sinclair/typebox';
import { AmountSchema, CurrencySchema } from '../../money.js';

export const TaxCategory = Type.Union([Type.Literal('good'), Type.Literal('service')]);
const Interval = Type.Union(['day', 'week', 'month', 'year'].map((i) => Type.Literal(i)));
const Metadata = Type.Record(Type.String(), Type.Unknown());
const NullableString = (max: number) => Type.Union([Type.String({ maxLength: max }), Type.Null()]);

/** `amount_as_decimal` (an older hosted form, "123.12"): the same amount in units with at most two decimals. */
const Decimal = Type.String({ pattern: '^[0-9]{1,9}(\\.[0-9]{1,2})?$', maxLength: 12 });

/**
 * A price to add, or (with `id`) one to change or, with `_destroy`, to stop offering (hosted section 4,
 * "prices_attributes"). `amount_in_cents` or `amount_as_decimal` names the amount.
 */
export const PriceInput = Type.Object({
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  _destroy: Type.Optional(Type.Boolean()),
  amount_in_cents: Type.Optional(AmountSchema),
  amount_as_decimal: Type.Optional(Decimal),
  currency: Type.Optional(CurrencySchema),
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
/** Months of installments a card may pay in (`[]`: none); GTQ only, as hosted. */
const Installments = Type.Array(Type.Integer({ minimum: 2, maximum: 48 }), { maxItems: 12, uniqueItems: true });

/**
 * How the product may be paid (hosted section 4): with `custom_payment_method_settings`, card and
 * bank transfer are each on or off; `available_installments` are the card's installment plans;
 * `has_dynamic_pricing` the hosted per-method surcharge (posd charges every method alike). Stored
 * with the page settings and carried onto each checkout line of the product, where the checkout page
 * honours them.
 */
export const PaymentSettings = {
  has_dynamic_pricing: Type.Optional(Type.Boolean()),
  custom_payment_method_settings: Type.Optional(Type.Boolean()),
  card_payments_enabled: Type.Optional(Type.Boolean()),
  bank_transfer_payments_enabled: Type.Optional(Type.Boolean()),
  available_installments: Type.Optional(Installments),
};
export const PAYMENT_SETTING_DEFAULTS = {
  has_dynamic_pricing: false,
  custom_payment_method_settings: false,
  card_payments_enabled: true,
  bank_transfer_payments_enabled: true,
  available_installments: [] as number[],
};
/** Units to sell; null: not counted. */
const Inventory = Type.Union([Type.Integer({ minimum: 0, maximum: 1_000_000_000 }), Type.Null()]);

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
  ...PaymentSettings,
  inventory_quantity: Type.Optional(Inventory),
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
  ...PaymentSettings,
  inventory_quantity: Type.Optional(Inventory),
  /** New prices are added; one with `id` changes (checkouts keep what they were made with) or, with `_destroy`, stops being offered. */
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
  // The hosted price object's billing-anchor fields, answered as what posd does: it bills from
  // the day a subscription starts and never prorates (docs/compatibility.md).
  proration_behavior: Type.Null(),
  billing_cycle_anchor_day: Type.Null(),
  defer_to_billing_day: Type.Boolean(),
  created_at: Type.String(),
});

export const ProductSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  tax_category: TaxCategory,
  status: Type.String({ description: '`active`, `archived`, or `sold_out` (an active product whose inventory_quantity is 0).' }),
  metadata: Metadata,
  success_url: Type.Union([Type.String(), Type.Null()]),
  cancel_url: Type.Union([Type.String(), Type.Null()]),
  image_url: Type.Union([Type.String(), Type.Null()]),
  custom_terms_and_conditions: Type.Union([Type.String(), Type.Null()]),
  phone_requirement: Requirement,
  address_requirement: Requirement,
  billing_info_requirement: Requirement,
  adjustable_quantity: Type.Boolean(),
  has_dynamic_pricing: Type.Boolean(),
  custom_payment_method_settings: Type.Boolean(),
  card_payments_enabled: Type.Boolean(),
  bank_transfer_payments_enabled: Type.Boolean(),
  available_installments: Installments,
  inventory_quantity: Type.Union([Type.Integer(), Type.Null()]),
  /** The public product page (checkout-page module): it opens a checkout of the product. */
  storefront_link: Type.String(),
  custom_fields: Type.Array(Type.Object({ id: Type.String(), key: Type.String(), type: Type.String() }, { additionalProperties: true })),
  prices: Type.Array(PriceSchema),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type Product = Static<typeof ProductSchema>;
export type Price = Static<typeof PriceSchema>;
