import { Type, type Static } from '@sinclair/typebox';
import { AmountSchema, CurrencySchema } from '../../money.js';
import { TaxCategory } from '../products/schema.js';
import { PageQuery } from '../../api/pagination.js';

const Metadata = Type.Record(Type.String(), Type.Unknown());
const NullableText = (max: number) => Type.Union([Type.String({ maxLength: max }), Type.Null()]);

/** How the buyer may pay a line (hosted section 3.1); the checkout page offers what every line allows. */
export const PaymentMethodType = Type.Union([Type.Literal('card'), Type.Literal('bank_transfer'), Type.Literal('balance'), Type.Literal('stablecoins')]);
const PaymentMethodTypes = Type.Array(PaymentMethodType, { maxItems: 4, uniqueItems: true });
/** Months of installments a card may pay a line in (`[]`: none); GTQ only, as hosted. */
const Installments = Type.Array(Type.Integer({ minimum: 2, maximum: 48 }), { maxItems: 12, uniqueItems: true });

export const CheckoutItemInput = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  amount_in_cents: Type.Optional(AmountSchema),
  currency: Type.Optional(CurrencySchema),
  quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 9 })),
  tax_category: Type.Optional(TaxCategory),
  product_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  price_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  // Every inline line of the official plugin names its kind.
  charge_type: Type.Optional(Type.Union([Type.Literal('one_time'), Type.Literal('recurring')])),
  // A recurring inline line (hosted section 3.1, the official plugin's subscription orders): paying
  // starts a subscription billed every `billing_interval_count` `billing_interval`s, after a free
  // trial when one is given (charged 0 now), ending by itself after `periods_before_automatic_cancellation`.
  billing_interval: Type.Optional(Type.Union(['day', 'week', 'month', 'year'].map((i) => Type.Literal(i)))),
  billing_interval_count: Type.Optional(Type.Integer({ minimum: 1, maximum: 365 })),
  // `""` (with count 0) is how the hosted service writes "no trial".
  free_trial_interval: Type.Optional(Type.Union([Type.Union(['day', 'week', 'month', 'year'].map((i) => Type.Literal(i))), Type.Literal(''), Type.Null()])),
  free_trial_interval_count: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 365 }), Type.Null()])),
  periods_before_automatic_cancellation: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 1000 }), Type.Null()])),
  payment_method_types: Type.Optional(PaymentMethodTypes),
  available_installments: Type.Optional(Installments),
  // What the checkout page shows of a line (hosted section 3.1), stored on the line and answered.
  image_url: Type.Optional(NullableText(2000)),
  description: Type.Optional(NullableText(2000)),
  custom_terms_and_conditions: Type.Optional(NullableText(10000)),
  metadata: Type.Optional(Type.Union([Metadata, Type.Null()])),
  // A per-method surcharge on the hosted service; posd charges every method alike (docs/compatibility.md).
  has_dynamic_pricing: Type.Optional(Type.Boolean()),
});
export type CheckoutItemInput = Static<typeof CheckoutItemInput>;

const DateTime = Type.String({ format: 'date-time' });
const Url = Type.Union([Type.String({ minLength: 1, maxLength: 2000 }), Type.Null()]);

/** `GET /checkouts` filters of the hosted reference; `user_id`: the checkouts of that user's customers. */
export const CheckoutListQuery = Type.Object({
  ...PageQuery,
  user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  status: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  from_time: Type.Optional(Type.String()),
  until_time: Type.Optional(Type.String()),
});

/** A share of the payment sent on after it succeeds (hosted section 3.1); no recipient: the platform. */
export const TransferSetupInput = Type.Object({
  amount_in_cents: Type.Integer({ minimum: 1, maximum: 100_000_000_000 }),
  recipient_id: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
});
export const TransferSetupSchema = Type.Object({
  id: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('completed'), Type.Literal('failed')]),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  recipient_id: Type.String(),
  transfer_id: Type.Union([Type.String(), Type.Null()]),
  failure_reason: Type.Union([Type.String(), Type.Null()]),
});
export type TransferSetup = Static<typeof TransferSetupSchema>;

export const CreateCheckoutBody = Type.Object({
  items: Type.Array(CheckoutItemInput, { minItems: 1, maxItems: 50 }),
  currency: Type.Optional(CurrencySchema),
  customer_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()])),
  metadata: Type.Optional(Metadata),
  expires_at: Type.Optional(Type.Union([DateTime, Type.Null()])),
  coupon_codes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 10 })),
  success_url: Type.Optional(Url),
  cancel_url: Type.Optional(Url),
  /** A platform charging for one of its connected children (hosted sections 3.1 and 14): the checkout is the child's. */
  custom_account_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()])),
  transfer_setups: Type.Optional(Type.Array(TransferSetupInput, { maxItems: 10 })),
  /** The buyer as a user (`us_`); the checkout's customer becomes the customer of the user's e-mail. */
  user_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()])),
});
export type CreateCheckoutBody = Static<typeof CreateCheckoutBody>;

export const UpdateCheckoutBody = Type.Object({
  items: Type.Optional(Type.Array(CheckoutItemInput, { minItems: 1, maxItems: 50 })),
  currency: Type.Optional(CurrencySchema),
  customer_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()])),
  metadata: Type.Optional(Metadata),
  expires_at: Type.Optional(Type.Union([DateTime, Type.Null()])),
  success_url: Type.Optional(Url),
  cancel_url: Type.Optional(Url),
});
export type UpdateCheckoutBody = Static<typeof UpdateCheckoutBody>;

export const CheckoutItemSchema = Type.Object({
  name: Type.String(),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  quantity: Type.Integer(),
  tax_category: TaxCategory,
  product_id: Type.Union([Type.String(), Type.Null()]),
  price_id: Type.Union([Type.String(), Type.Null()]),
  // Optional in the type so the lines other modules make (cash sales, terminals) need not name
  // them; every answer carries them (null: whatever the account allows).
  payment_method_types: Type.Optional(Type.Union([PaymentMethodTypes, Type.Null()])),
  available_installments: Type.Optional(Type.Union([Installments, Type.Null()])),
  image_url: Type.Optional(NullableText(2000)),
  description: Type.Optional(NullableText(2000)),
  custom_terms_and_conditions: Type.Optional(NullableText(10000)),
  metadata: Type.Optional(Type.Union([Metadata, Type.Null()])),
  has_dynamic_pricing: Type.Optional(Type.Boolean()),
});
export type CheckoutItem = Static<typeof CheckoutItemSchema>;

const NS = Type.Union([Type.String(), Type.Null()]);
/** Hosted section 3.2: the payment that paid the checkout and who it names; null when none yet. */
const CheckoutPaymentSchema = Type.Object({
  id: Type.String(),
  paymentable: Type.Object({
    type: Type.Union([Type.Literal('OneTimePayment'), Type.Literal('Subscription')]),
    id: Type.String(),
    tax_name: NS,
    tax_id: NS,
    address: NS,
    phone_number: NS,
  }),
});
const CheckoutPaymentMethodSchema = Type.Object({
  id: Type.String(),
  type: Type.String({ description: '`card` or `bank_transfer_receiver` as hosted; `balance`, `crypto`, `cash` for the methods posd adds.' }),
  card: Type.Union([Type.Object({ last4: Type.String(), network: Type.String() }), Type.Null()]),
});
/** A checkout's custom field answer (hosted section 3.2); posd's page asks none, so the list is empty. */
const CustomFieldAnswer = Type.Object({ field_id: Type.String(), key: Type.String(), type: Type.String(), value: Type.Unknown() });

export const CheckoutSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  status: Type.String(),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  items: Type.Array(CheckoutItemSchema),
  metadata: Metadata,
  url: Type.String(),
  checkout_url: Type.String(),
  total_in_cents: Type.Integer(),
  subtotal_in_cents: Type.Integer(),
  discount: Type.Union([
    Type.Object({
      amount_in_cents: Type.Integer(),
      // The coupon object as GET /coupons/{id} answers it (the first, when several applied).
      coupon: Type.Union([Type.Object({ id: Type.String() }, { additionalProperties: true }), Type.Null()]),
    }),
    Type.Null(),
  ]),
  payment: Type.Union([CheckoutPaymentSchema, Type.Null()]),
  payment_method: Type.Union([CheckoutPaymentMethodSchema, Type.Null()]),
  custom_fields: Type.Array(CustomFieldAnswer),
  success_url: Type.Union([Type.String(), Type.Null()]),
  cancel_url: Type.Union([Type.String(), Type.Null()]),
  transfer_setups: Type.Array(TransferSetupSchema),
  customer_id: Type.Union([Type.String(), Type.Null()]),
  expires_at: Type.Union([Type.String(), Type.Null()]),
  latest_intent: Type.Union([Type.Object({ id: Type.String() }), Type.Null()]),
  payment_intent_id: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type Checkout = Static<typeof CheckoutSchema>;

export type { CheckoutHooks } from './hooks.js';
