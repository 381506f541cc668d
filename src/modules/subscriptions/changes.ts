import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { ApiError, invalid } from '../../errors.js';
import { newId } from '../../ids.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { subscriptionRecord } from './sync.js';
import type { Account } from '../../accounts/service.js';
import { getCustomer } from '../customers/service.js';
import { getPrice } from '../products/service.js';
import { invoiceItemView, subscriptionEventPayload, subscriptionItemView } from './document.js';
import { answeredStatus } from './machine.js';
import type { UpdateSubscriptionBody } from './schema.js';
import type { SubscriptionsService } from './service.js';
import type { InvoiceItemRow, SubscriptionItemRow, SubscriptionRow } from './store.js';

/**
 * PATCH /subscriptions/{id}: a status move (the machine's), general information, recurring items
 * added or removed, one-time charges for the next renewal. All of it in one transaction, validated
 * before anything is written; each change emits its spec 6.2 event once.
 */
export function updateSubscription(ctx: AppContext, subs: SubscriptionsService, account: Account, id: string, body: UpdateSubscriptionBody): SubscriptionRow {
  return tx(ctx.db, () => {
    let sub = subs.find([account.id], account.live_mode, id);
    const at = isoTime(ctx.clock.now());
    const changesContent = body.card !== undefined || body.customer_id !== undefined || body.add_items || body.remove_items || body.invoice_items;
    // A canceled subscription takes no changes, except being reactivated in this same request; one that never started takes none.
    if (changesContent && ((sub.status === 'canceled' && body.status !== 'active') || sub.status === 'unable_to_start')) {
      throw new ApiError('subscription_transition_invalid', {
        message: `A ${answeredStatus(sub.status)} subscription cannot be changed.`,
        extra: { status: answeredStatus(sub.status) },
      });
    }

    const errors: Record<string, string> = {};
    // The hosted form of pause/resume (`act`) and posd's (`status`) name one move: not both at once.
    if (body.act !== undefined && body.status !== undefined) errors.act = 'cannot be combined with status';
    if (body.customer_id && !getCustomer(ctx, account, body.customer_id)) errors.customer_id = 'does not exist';
    const adds = (body.add_items ?? []).map((item, i) => {
      const found = getPrice(ctx, account, item.price_id);
      const field = `add_items.${i}.price_id`;
      if (!found) return void (errors[field] = 'does not exist');
      const { price, product } = found;
      if (product.status !== 'active') return void (errors[field] = 'belongs to an archived product');
      if (price.charge_type !== 'recurring') return void (errors[field] = 'is not a recurring price (one-time charges go in invoice_items)');
      if (price.currency !== sub.currency) return void (errors[field] = `must be in ${sub.currency}, the subscription's currency`);
      // One charge per period: an item must renew on the subscription's own schedule.
      if (price.billing_interval !== sub.billing_interval || (price.billing_interval_count ?? 1) !== sub.billing_interval_count) {
        return void (errors[field] = `must bill every ${sub.billing_interval_count} ${sub.billing_interval}, like the subscription`);
      }
      const row: SubscriptionItemRow = {
        id: newId('sitem'),
        account_id: sub.account_id,
        live_mode: sub.live_mode,
        subscription_id: sub.id,
        product_id: product.id,
        price_id: price.id,
        name: product.name,
        amount_in_cents: price.amount_in_cents,
        quantity: item.quantity ?? 1,
        tax_category: product.tax_category,
        created_at: at,
        removed_at: null,
      };
      return row;
    });
    const active = new Set(subs.store.items(sub.id).map((i) => i.id));
    (body.remove_items ?? []).forEach((itemId, i) => {
      if (!active.has(itemId)) errors[`remove_items.${i}`] = 'is not an item of this subscription';
    });
    if (Object.keys(errors).length) throw invalid(errors);

    if (body.status === 'paused' || body.act === 'pause') sub = subs.pause(account, id);
    else if (body.status === 'active') sub = subs.activate(account, id);
    else if (body.act === 'unpause') sub = subs.resume(account, id);

    const emit = (type: string, extra: Record<string, unknown>) =>
      ctx.outbox.emit({
        accountId: sub.account_id,
        liveMode: sub.live_mode === 1,
        type,
        objectId: sub.id,
        payload: subscriptionEventPayload(sub, type, at, extra),
      });

    // General information: emits subscription.update only when something actually differs.
    const patch: Partial<SubscriptionRow> = {};
    if (body.card && (body.card.last4 !== sub.card_last4 || (body.card.network ?? null) !== sub.card_network)) {
      patch.card_last4 = body.card.last4;
      patch.card_network = body.card.network ?? null;
      // Another card is another saved payment method (default_payment_method.id).
      patch.payment_method_id = newId('pay_m');
    }
    if (body.customer_id !== undefined && body.customer_id !== sub.customer_id) patch.customer_id = body.customer_id;
    const changed = Object.keys(patch).map((k) => (k.startsWith('card_') || k === 'payment_method_id' ? 'card' : k));
    if (changed.length) {
      if (!subs.store.save({ ...sub, ...patch, updated_at: at })) {
        throw new ApiError('subscription_transition_invalid', {
          message: 'The subscription changed meanwhile; read it again.',
          extra: { status: answeredStatus(sub.status) },
        });
      }
      sub = subs.store.get(sub.id)!;
      emit('subscription.update', { changed: [...new Set(changed)] });
    }

    for (const row of adds) {
      subs.store.insertItem(row!);
      emit('subscription.item_added', { item: subscriptionItemView(row!) });
    }
    for (const itemId of body.remove_items ?? []) {
      const item = subs.store.items(sub.id).find((i) => i.id === itemId)!;
      subs.store.removeItem(sub.id, itemId, at);
      emit('subscription.item_removed', { item: { ...subscriptionItemView(item), removed_at: at } });
    }
    for (const input of body.invoice_items ?? []) {
      const row: InvoiceItemRow = {
        id: newId('siinv'),
        account_id: sub.account_id,
        live_mode: sub.live_mode,
        subscription_id: sub.id,
        description: input.description,
        amount_in_cents: input.amount_in_cents,
        created_at: at,
        billed_checkout_id: null,
      };
      subs.store.insertInvoiceItem(row);
      emit('subscription.invoice_item_added', { invoice_item: invoiceItemView(row) });
    }
    if (changesContent) {
      appendSyncRecord(ctx.db, {
        kind: 'subscription',
        accountId: sub.account_id,
        liveMode: sub.live_mode === 1,
        createdAt: at,
        payload: subscriptionRecord(subs.store, subs.store.get(sub.id)!),
      });
    }
    return sub;
  });
}
