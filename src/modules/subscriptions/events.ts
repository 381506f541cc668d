import type { EventExample, ExampleInput } from '../../events/catalogue.js';
import { newId } from '../../ids.js';
import {
  invoiceItemView,
  setupIntentEventPayload,
  subscriptionCreatePayload,
  subscriptionEventPayload,
  subscriptionItemView,
  type PayloadProduct,
} from './document.js';
import type { SubscriptionRow } from './store.js';

/**
 * The test-send payloads of the subscription events (`PosdModule.events`): example rows through the
 * builders the emitters call (service.ts, changes.ts, checkout-hook.ts), with the extras each
 * emitter adds, so a test-send and a real event have the same shape.
 */
function exampleRow(i: ExampleInput, status: SubscriptionRow['status'], trial = false): SubscriptionRow {
  const at = i.createdAt;
  const setupIntentId = newId('si');
  return {
    id: newId('su'),
    account_id: i.accountId,
    live_mode: i.liveMode ? 1 : 0,
    customer_id: newId('cus'),
    product_id: newId('prod'),
    price_id: newId('price'),
    amount_in_cents: 15000,
    currency: 'GTQ',
    billing_interval: 'month',
    billing_interval_count: 1,
    status,
    current_period_start: at,
    current_period_end: at,
    failed_attempts: status === 'past_due' ? 1 : 0,
    first_failure_at: status === 'past_due' ? at : null,
    next_retry_at: status === 'past_due' ? at : null,
    paused_at: status === 'paused' ? at : null,
    canceled_at: status === 'canceled' || status === 'unable_to_start' ? at : null,
    cancel_reason: status === 'canceled' ? 'requested' : status === 'unable_to_start' ? 'trial_payment_failed' : null,
    origin_checkout_id: trial ? setupIntentId : newId('ch'),
    latest_checkout_id: trial ? null : newId('ch'),
    card_network: 'visa',
    card_last4: '4242',
    sandbox_outcome: 'succeeded',
    trial_end: trial ? at : null,
    setup_intent_id: trial ? setupIntentId : null,
    periods_paid: trial ? 0 : 1,
    cancel_after_periods: null,
    minimum_periods: null,
    payment_method_id: newId('pay_m'),
    version: 0,
    created_at: at,
    updated_at: at,
  };
}

function exampleProduct(): PayloadProduct {
  return {
    id: newId('prod'),
    name: 'Membership',
    description: 'Monthly membership',
    metadata: {},
    status: 'active',
    prices: [
      {
        id: newId('price'),
        amount_in_cents: 15000,
        billing_interval: 'month',
        billing_interval_count: 1,
        charge_type: 'recurring',
        currency: 'GTQ',
        free_trial_interval: null,
        free_trial_interval_count: null,
        periods_before_automatic_cancellation: null,
      },
    ],
  };
}

const exampleItem = (i: ExampleInput, sub: SubscriptionRow) =>
  subscriptionItemView({
    id: newId('sitem'),
    account_id: i.accountId,
    live_mode: sub.live_mode,
    subscription_id: sub.id,
    product_id: newId('prod'),
    price_id: newId('price'),
    name: 'Locker',
    amount_in_cents: 2500,
    quantity: 1,
    tax_category: 'service',
    created_at: i.createdAt,
    removed_at: null,
  });

const plain =
  (type: string, status: SubscriptionRow['status'], extra: (i: ExampleInput, sub: SubscriptionRow) => Record<string, unknown> = () => ({})): EventExample =>
  (i) => {
    const sub = exampleRow(i, status);
    return subscriptionEventPayload(sub, type, i.createdAt, extra(i, sub));
  };

export const subscriptionEventExamples: Record<string, EventExample> = {
  'subscription.create': (i) =>
    subscriptionCreatePayload(
      exampleRow(i, 'active'),
      { email: 'ana.lopez@example.com', full_name: 'Ana López', phone: '+50255550123', tax_id: 'CF' },
      exampleProduct(),
      newId('pa'),
      i.createdAt,
    ),
  'subscription.past_due': plain('subscription.past_due', 'past_due', () => ({ failure_reason: 'card_declined' })),
  'subscription.pause': plain('subscription.pause', 'paused'),
  'subscription.unpause': plain('subscription.unpause', 'active'),
  'subscription.reactivate': plain('subscription.reactivate', 'active'),
  'subscription.cancel': plain('subscription.cancel', 'canceled', () => ({ reason: 'requested', failure_reason: null })),
  'subscription.update': plain('subscription.update', 'active', () => ({ changed: ['card'] })),
  'subscription.item_added': plain('subscription.item_added', 'active', (i, sub) => ({ item: exampleItem(i, sub) })),
  'subscription.item_removed': plain('subscription.item_removed', 'active', (i, sub) => ({ item: { ...exampleItem(i, sub), removed_at: i.createdAt } })),
  'subscription.invoice_item_added': plain('subscription.invoice_item_added', 'active', (i, sub) => ({
    invoice_item: invoiceItemView({
      id: newId('siinv'),
      account_id: i.accountId,
      live_mode: sub.live_mode,
      subscription_id: sub.id,
      description: 'Towel service',
      amount_in_cents: 1500,
      created_at: i.createdAt,
      billed_checkout_id: null,
    }),
  })),
  'setup_intent.succeeded': (i) => setupIntentEventPayload(exampleRow(i, 'active', true), 'setup_intent.succeeded', i.createdAt),
  'setup_intent.cancelled': (i) =>
    setupIntentEventPayload(exampleRow(i, 'unable_to_start', true), 'setup_intent.cancelled', i.createdAt, {
      reason: 'trial_payment_failed',
      failure_reason: 'card_declined',
    }),
};
