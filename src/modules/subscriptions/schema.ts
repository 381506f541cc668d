import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../api/schemas.js';

/** A subscription's status as answered: the hosted service's names (`cancelled`, `unable_to_start`; machine.ts answeredStatus). */
export const StatusSchema = Type.Union(['active', 'past_due', 'paused', 'cancelled', 'unable_to_start'].map((s) => Type.Literal(s)));
/** The `status` filter of `GET /subscriptions`: the answered names, and the spec's `canceled` for the same state. */
export const StatusFilterSchema = Type.Union(['active', 'past_due', 'paused', 'cancelled', 'canceled', 'unable_to_start'].map((s) => Type.Literal(s)));

export const SubscriptionSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  status: StatusSchema,
  customer_id: Nullable(Type.String()),
  product_id: Type.String(),
  price_id: Type.String(),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  billing_interval: Type.String(),
  billing_interval_count: Type.Integer(),
  current_period_start: Type.String(),
  current_period_end: Type.String(),
  failed_attempts: Type.Integer(),
  next_retry_at: Nullable(Type.String()),
  paused_at: Nullable(Type.String()),
  canceled_at: Nullable(Type.String()),
  cancel_reason: Nullable(Type.String()),
  checkout_id: Nullable(Type.String()),
  latest_checkout_id: Nullable(Type.String()),
  card: Nullable(Type.Object({ network: Nullable(Type.String()), last4: Type.String() })),
  trial_end: Nullable(Type.String()),
  setup_intent_id: Nullable(Type.String()),
  created_at: Type.String(),
  updated_at: Type.String(),
  /** Recurring products added after the start, billed with every renewal beside the subscription's own price. */
  items: Type.Array(
    Type.Object({
      id: Type.String(),
      product_id: Type.String(),
      price_id: Type.String(),
      name: Type.String(),
      amount_in_cents: Type.Integer(),
      quantity: Type.Integer(),
      created_at: Type.String(),
    }),
  ),
  /** One-time charges added to the next invoice, not yet paid. */
  pending_invoice_items: Type.Array(Type.Object({ id: Type.String(), description: Type.String(), amount_in_cents: Type.Integer(), created_at: Type.String() })),
  // The hosted subscription object's fields (hosted-api.md section 7; document.ts hostedSubscriptionFields).
  description: Nullable(Type.String()),
  tax_name: Nullable(Type.String()),
  tax_id: Nullable(Type.String()),
  resumes_on: Nullable(Type.String()),
  next_payment_attempt_at: Nullable(Type.String()),
  payment_retries: Type.Integer(),
  default_payment_method: Nullable(
    Type.Object({ id: Type.String(), type: Type.Literal('card'), card: Type.Object({ last4: Type.String(), network: Nullable(Type.String()) }) }),
  ),
  subscriber: Nullable(
    Type.Object({
      id: Type.String(),
      first_name: Nullable(Type.String()),
      last_name: Nullable(Type.String()),
      full_name: Nullable(Type.String()),
      email: Nullable(Type.String()),
      phone_number: Nullable(Type.String()),
    }),
  ),
  checkout: Nullable(Type.Object({ id: Type.String() })),
  product: Type.Object({ id: Type.String() }),
  /** Periods paid so far (a free trial is not one) and the price's limits on them. */
  periods_paid: Type.Integer(),
  periods_before_automatic_cancellation: Nullable(Type.Integer()),
  periods_before_allowed_to_cancel: Nullable(Type.Integer()),
});

/** The hosted answer to `DELETE /subscriptions/{id}` (hosted-api.md section 7). */
export const CANCEL_MESSAGE = 'Suscripción cancelada';
/** `DELETE /subscriptions/{id}`: the hosted `{message}` and the subscription as it now stands. */
export const CancelAnswerSchema = Type.Object({ message: Type.Literal(CANCEL_MESSAGE), ...SubscriptionSchema.properties });

const CardInput = Type.Object({
  network: Type.Optional(Type.String({ minLength: 1, maxLength: 30 })),
  last4: Type.String({ pattern: '^[0-9]{4}$' }),
});

/**
 * Any of: `act` (`pause` / `unpause`, the hosted form), `status` (`paused` pauses; `active` resumes a paused one or reactivates a canceled one),
 * general information (`card`, `customer_id`: `subscription.update`), `add_items` / `remove_items`
 * (recurring products: `subscription.item_added` / `item_removed`), `invoice_items` (one-time charges
 * for the next renewal: `subscription.invoice_item_added`).
 */
export const UpdateSubscriptionBody = Type.Object(
  {
    status: Type.Optional(Type.Union([Type.Literal('paused'), Type.Literal('active')])),
    /** The hosted body of pause/resume (a hosted client's `{act}`): `pause`, or `unpause` (only from paused). */
    act: Type.Optional(Type.Union([Type.Literal('pause'), Type.Literal('unpause')])),
    card: Type.Optional(CardInput),
    customer_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()])),
    add_items: Type.Optional(
      Type.Array(Type.Object({ price_id: Type.String({ minLength: 1, maxLength: 64 }), quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 9 })) }), {
        minItems: 1,
        maxItems: 10,
      }),
    ),
    remove_items: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 10, uniqueItems: true })),
    invoice_items: Type.Optional(
      Type.Array(
        Type.Object({ description: Type.String({ minLength: 1, maxLength: 200 }), amount_in_cents: Type.Integer({ minimum: 1, maximum: 100_000_000 }) }),
        { minItems: 1, maxItems: 10 },
      ),
    ),
  },
  { minProperties: 1 },
);
export type UpdateSubscriptionBody = Static<typeof UpdateSubscriptionBody>;

export const AdvanceBody = Type.Object({
  outcome: Type.Optional(Type.Union([Type.Literal('succeeded'), Type.Literal('failed')])),
  failure_reason: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
});

/** Starts a subscription to a price with a free trial: the card is kept (tokenized), nothing is charged. */
export const CreateTrialSubscriptionBody = Type.Object({
  price_id: Type.String({ minLength: 1, maxLength: 64 }),
  customer_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 9 })),
  card: CardInput,
});
export type CreateTrialSubscriptionBody = Static<typeof CreateTrialSubscriptionBody>;
