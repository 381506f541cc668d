import { LEGACY_API_VERSION } from '../../events/formats.js';
import type { Customer } from '../customers/service.js';
import type { Price, Product } from '../products/schema.js';
import { answeredStatus } from './machine.js';
import type { InvoiceItemRow, SubscriptionItemRow, SubscriptionRow, SubscriptionsStore } from './store.js';

export function subscriptionView(r: SubscriptionRow) {
  return {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    // The hosted spelling (`cancelled`), in answers and event payloads alike.
    status: answeredStatus(r.status),
    customer_id: r.customer_id,
    product_id: r.product_id,
    price_id: r.price_id,
    amount_in_cents: r.amount_in_cents,
    currency: r.currency,
    billing_interval: r.billing_interval,
    billing_interval_count: r.billing_interval_count,
    current_period_start: r.current_period_start,
    current_period_end: r.current_period_end,
    failed_attempts: r.failed_attempts,
    next_retry_at: r.next_retry_at,
    paused_at: r.paused_at,
    canceled_at: r.canceled_at,
    cancel_reason: r.cancel_reason,
    // A trial subscription started without a checkout: its origin is the setup intent (see startTrial).
    checkout_id: r.origin_checkout_id === r.setup_intent_id ? null : r.origin_checkout_id,
    latest_checkout_id: r.latest_checkout_id,
    card: r.card_last4 ? { network: r.card_network, last4: r.card_last4 } : null,
    trial_end: r.trial_end,
    setup_intent_id: r.setup_intent_id,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}
export type SubscriptionView = ReturnType<typeof subscriptionView>;

type PayloadPrice = Pick<
  Price,
  | 'id'
  | 'amount_in_cents'
  | 'billing_interval'
  | 'billing_interval_count'
  | 'charge_type'
  | 'currency'
  | 'free_trial_interval'
  | 'free_trial_interval_count'
  | 'periods_before_automatic_cancellation'
>;
export type PayloadProduct = Pick<Product, 'id' | 'name' | 'description' | 'metadata' | 'status'> & { prices: PayloadPrice[] };
export type PayloadCustomer = Pick<Customer, 'email' | 'full_name' | 'phone' | 'tax_id'>;

/**
 * Spec 6.4's legacy `subscription.create` payload: the purchase, the customer, the product and its
 * prices. The emitter and the test-send (`events.ts`) both build it here.
 */
export function subscriptionCreatePayload(r: SubscriptionRow, customer: PayloadCustomer | undefined, product: PayloadProduct, paymentId: string, at: string) {
  return {
    api_version: LEGACY_API_VERSION,
    created_at: at,
    customer_email: customer?.email ?? null,
    customer_id: r.customer_id,
    customer_name: customer?.full_name ?? null,
    event_type: 'subscription.create',
    id: r.id,
    subscription: subscriptionView(r),
    payment: {
      id: paymentId,
      paymentable: {
        address: null,
        id: r.id,
        phone_number: customer?.phone ?? null,
        tax_id: customer?.tax_id ?? null,
        tax_name: customer?.full_name ?? null,
        type: 'Subscription',
      },
    },
    product: {
      address_requirement: 'none',
      billing_info_requirement: 'none',
      cancel_url: null,
      custom_terms_and_conditions: null,
      description: product.description,
      has_dynamic_pricing: false,
      id: product.id,
      metadata: product.metadata,
      name: product.name,
      phone_requirement: 'none',
      prices: product.prices.map((p) => ({
        amount_in_cents: p.amount_in_cents,
        billing_interval: p.billing_interval,
        billing_interval_count: p.billing_interval_count,
        charge_type: p.charge_type,
        currency: p.currency,
        free_trial_interval: p.free_trial_interval,
        free_trial_interval_count: p.free_trial_interval_count,
        id: p.id,
        periods_before_automatic_cancellation: p.periods_before_automatic_cancellation,
      })),
      status: product.status,
      storefront_link: null,
      success_url: null,
    },
  };
}

/** The payload of every other `subscription.*` event (spec 6.2 does not show them): the subscription at transition time. */
export function subscriptionEventPayload(r: SubscriptionRow, type: string, at: string, extra: Record<string, unknown> = {}) {
  return { api_version: LEGACY_API_VERSION, event_type: type, id: r.id, created_at: at, ...extra, subscription: subscriptionView(r) };
}

/** `setup_intent.succeeded|cancelled` (spec 6.2 shows no payload): the card tokenized for a trial and its subscription. */
export function setupIntentEventPayload(r: SubscriptionRow, type: string, at: string, extra: Record<string, unknown> = {}) {
  return {
    api_version: LEGACY_API_VERSION,
    event_type: type,
    id: r.setup_intent_id,
    created_at: at,
    status: type === 'setup_intent.succeeded' ? 'succeeded' : 'cancelled',
    customer_id: r.customer_id,
    subscription_id: r.id,
    card: r.card_last4 ? { network: r.card_network, last4: r.card_last4 } : null,
    ...extra,
    subscription: subscriptionView(r),
  };
}

export function subscriptionItemView(i: SubscriptionItemRow) {
  return {
    id: i.id,
    product_id: i.product_id,
    price_id: i.price_id,
    name: i.name,
    amount_in_cents: i.amount_in_cents,
    quantity: i.quantity,
    created_at: i.created_at,
  };
}

export function invoiceItemView(i: InvoiceItemRow) {
  return { id: i.id, description: i.description, amount_in_cents: i.amount_in_cents, created_at: i.created_at };
}

/** What the API answers: the subscription, its added recurring items and the one-time charges awaiting the next renewal. */
export function subscriptionDetail(store: SubscriptionsStore, r: SubscriptionRow) {
  return {
    ...subscriptionView(r),
    items: store.items(r.id).map(subscriptionItemView),
    pending_invoice_items: store.pendingInvoiceItems(r.id).map(invoiceItemView),
  };
}

/** The customer fields the hosted subscription object shows (`subscriber`, `tax_name`, `tax_id`). */
export type SubscriberCustomer = Pick<Customer, 'id' | 'email' | 'full_name' | 'phone' | 'tax_id'>;

/**
 * The hosted subscription object's fields (hosted-api.md section 7) beside posd's own: the buyer as
 * `subscriber` (posd's buyer is the customer, so `subscriber.id` is the `cus_` id), the saved card as
 * `default_payment_method`, `checkout`/`product` as `{id}`, the next charge and its retries, and the
 * price's period limits with the periods paid.
 */
export function hostedSubscriptionFields(r: SubscriptionRow, customer: SubscriberCustomer | undefined, productName: string | null) {
  const name = customer?.full_name?.trim() ?? '';
  const space = name.indexOf(' ');
  const checkoutId = r.origin_checkout_id === r.setup_intent_id ? null : r.origin_checkout_id;
  const ending = r.cancel_after_periods !== null && r.periods_paid >= r.cancel_after_periods;
  return {
    description: productName,
    tax_name: customer?.full_name ?? null,
    tax_id: customer?.tax_id ?? null,
    // posd pauses until unpaused: no resume date is ever scheduled.
    resumes_on: null,
    next_payment_attempt_at: r.status === 'past_due' ? r.next_retry_at : r.status === 'active' && !ending ? r.current_period_end : null,
    payment_retries: r.failed_attempts,
    default_payment_method:
      r.payment_method_id && r.card_last4 ? { id: r.payment_method_id, type: 'card' as const, card: { last4: r.card_last4, network: r.card_network } } : null,
    subscriber: customer
      ? {
          id: customer.id,
          first_name: name ? (space > 0 ? name.slice(0, space) : name) : null,
          last_name: space > 0 ? name.slice(space + 1) : null,
          full_name: customer.full_name,
          email: customer.email,
          phone_number: customer.phone,
        }
      : null,
    checkout: checkoutId ? { id: checkoutId } : null,
    product: { id: r.product_id },
    periods_paid: r.periods_paid,
    periods_before_automatic_cancellation: r.cancel_after_periods,
    periods_before_allowed_to_cancel: r.minimum_periods,
  };
}
