import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { initialState } from '../../lifecycle.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { subscriptionRecord } from './sync.js';
import type { Account } from '../../accounts/service.js';
import type { Checkout } from '../checkouts/schema.js';
import { getPrice } from '../products/service.js';
import { customerById } from '../customers/service.js';
import { setupIntentEventPayload, subscriptionCreatePayload } from './document.js';
import { addInterval } from './periods.js';
import { subscriptionMachine } from './machine.js';
import { SubscriptionsStore, type SubscriptionRow } from './store.js';
import type { CheckoutHooks } from '../checkouts/schema.js';

/**
 * Spec 3.5 "(none) → active on purchase of a recurring product": called by the payment settlement,
 * inside its transaction, for a paid checkout. One subscription per recurring line; a renewal's own
 * checkout (metadata `subscription_id`) makes none. Emits `subscription.create` with the payment.
 */
export function createSubscriptionsForCheckout(
  ctx: AppContext,
  account: Account,
  checkout: Checkout,
  payment: { paymentIntentId: string; card: { network: string; last4: string } | null; paymentMethodId?: string | null },
): SubscriptionRow[] {
  if (!ctx.db.inTransaction) throw new Error('createSubscriptionsForCheckout() outside the payment transaction');
  if (checkout.metadata.subscription_id) return [];
  const store = new SubscriptionsStore(ctx.db);
  const at = isoTime(ctx.clock.now());
  const made: SubscriptionRow[] = [];
  for (const item of checkout.items) {
    if (!item.price_id) continue;
    const found = getPrice(ctx, account, item.price_id);
    if (found?.price.charge_type !== 'recurring') continue;
    const { price, product } = found;
    const interval = (price.billing_interval ?? 'month') as SubscriptionRow['billing_interval'];
    const count = price.billing_interval_count ?? 1;
    // A price with a free trial was charged 0 on the checkout (resolveItems): the trial is the
    // first period and the first charge comes when it ends, as for POST /subscriptions (startTrial).
    const trialEnd = price.free_trial_interval
      ? addInterval(at, price.free_trial_interval as SubscriptionRow['billing_interval'], price.free_trial_interval_count ?? 1)
      : null;
    const row: SubscriptionRow = {
      id: newId('su'),
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      customer_id: checkout.customer_id,
      product_id: product.id,
      price_id: price.id,
      // What the checkout charged per unit (its line copied the price when it was made), so a price
      // changed before the payment never bills the subscription at another amount than the checkout;
      // a trial line charged 0 bills the price's amount once the trial ends.
      amount_in_cents: (trialEnd ? price.amount_in_cents : item.amount_in_cents) * item.quantity,
      currency: trialEnd ? price.currency : item.currency,
      billing_interval: interval,
      billing_interval_count: count,
      status: initialState(subscriptionMachine),
      current_period_start: at,
      current_period_end: trialEnd ?? addInterval(at, interval, count),
      failed_attempts: 0,
      first_failure_at: null,
      next_retry_at: null,
      paused_at: null,
      canceled_at: null,
      cancel_reason: null,
      origin_checkout_id: checkout.id,
      latest_checkout_id: checkout.id,
      card_network: payment.card?.network ?? null,
      card_last4: payment.card?.last4 ?? null,
      sandbox_outcome: 'succeeded',
      trial_end: trialEnd,
      // The card kept for the trial's end (setup_intent.* events carry it, as for startTrial).
      setup_intent_id: trialEnd ? newId('si') : null,
      periods_paid: trialEnd ? 0 : 1,
      cancel_after_periods: price.periods_before_automatic_cancellation ?? null,
      minimum_periods: price.periods_before_allowed_to_cancel ?? null,
      // The card the checkout saved, under the id the checkout answers (one id per saved card).
      payment_method_id: payment.card ? (payment.paymentMethodId ?? newId('pay_m')) : null,
      version: 0,
      created_at: at,
      updated_at: at,
    };
    // A settlement repeated for the same checkout finds its subscriptions already there.
    if (!store.insert(row)) continue;
    ctx.outbox.emit({
      accountId: account.id,
      liveMode: account.live_mode,
      type: 'subscription.create',
      objectId: row.id,
      payload: subscriptionCreatePayload(row, row.customer_id ? customerById(ctx, row.customer_id) : undefined, product, payment.paymentIntentId, at),
    });
    if (row.setup_intent_id) {
      ctx.outbox.emit({
        accountId: account.id,
        liveMode: account.live_mode,
        type: 'setup_intent.succeeded',
        objectId: row.setup_intent_id,
        payload: setupIntentEventPayload(row, 'setup_intent.succeeded', at),
      });
    }
    appendSyncRecord(ctx.db, {
      kind: 'subscription',
      accountId: account.id,
      liveMode: account.live_mode,
      createdAt: at,
      payload: subscriptionRecord(store, row),
    });
    made.push(row);
  }
  return made;
}

export const subscriptionCheckoutHooks: CheckoutHooks = {
  afterPay(ctx, account, checkout, paid) {
    createSubscriptionsForCheckout(ctx, account, checkout, paid);
  },
};
