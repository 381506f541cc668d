import { Type, type Static } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import { sendCommitted } from '../../api/idempotency.js';
import { ErrorSchema, errorBodies } from '../../api/schemas.js';
import { tx } from '../../db/database.js';
import { ApiError, invalid } from '../../errors.js';
import type { Account } from '../../accounts/service.js';
import { createCheckout } from '../checkouts/service.js';
import { CheckoutItemInput } from '../checkouts/schema.js';
import { intentRow } from '../intents/service.js';
import { savedCard, settleCheckoutPayment } from '../payments/service.js';
import { getPrice } from '../products/service.js';
import { SubscriptionsStore } from './store.js';

/**
 * Hosted "Tokenized Payments" (hosted-api.md section 9): `POST /one_time_payments
 * {payment_method_id, items}` charges a saved card without the buyer. posd never sees card data;
 * the cards it keeps are named by one `pay_m_` id each: a card paid at a checkout (the checkout's
 * `payment_method.id`, `payment_methods`) and a subscription's card on file
 * (`default_payment_method`, the same id when the checkout started it). In a sandbox the charge is
 * a checkout settled through `settleCheckoutPayment` like the sandbox checkout payment (payment
 * intent, ledger row, events), answered 201 `{id: "on_…", status: "paid"}`; a sandbox card set to decline (the subscription's
 * `advance` helper) records the failed intent and answers 402 `card_declined`. In live mode the box
 * has no acquirer to charge a card that is not present: 422 `card_not_present_unavailable`.
 */
export const OneTimePaymentBody = Type.Object({
  payment_method_id: Type.String({ minLength: 1, maxLength: 64 }),
  items: Type.Array(CheckoutItemInput, { minItems: 1, maxItems: 50 }),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export type OneTimePaymentBody = Static<typeof OneTimePaymentBody>;

export const OneTimePaymentSchema = Type.Object({
  id: Type.String(),
  status: Type.Literal('paid'),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  checkout_id: Type.String(),
  payment_intent_id: Type.String(),
  payment_method_id: Type.String(),
  customer_id: Type.Union([Type.String(), Type.Null()]),
  // Where the hosted reference is silent (docs/compatibility.md): the object's kind, as SDKs read it.
  object: Type.Literal('one_time_payment'),
});

interface Charged {
  id: string;
  paid: boolean;
  amount_in_cents: number;
  currency: string;
  checkout_id: string;
  payment_intent_id: string;
  payment_method_id: string;
  customer_id: string | null;
}

export function chargeSavedCard(ctx: AppContext, account: Account, body: OneTimePaymentBody): Charged {
  return tx(ctx.db, () => {
    const card = savedCardOf(ctx, account, body.payment_method_id);
    if (!card) throw invalid({ payment_method_id: 'no saved card with this id in this account' });
    if (account.live_mode) throw new ApiError('card_not_present_unavailable');
    body.items.forEach((item, i) => {
      const recurring = item.charge_type === 'recurring' || (item.price_id && getPrice(ctx, account, item.price_id)?.price.charge_type === 'recurring');
      if (recurring) throw invalid({ [`items.${i}.charge_type`]: 'a one-time payment takes one-time lines only' });
    });
    const checkout = createCheckout(ctx, account, {
      items: body.items,
      customer_id: card.customer_id,
      metadata: { ...(body.metadata ?? {}), payment_method_id: body.payment_method_id },
    });
    const declined = card.sandbox_outcome === 'failed';
    const result = settleCheckoutPayment(ctx, account, {
      checkoutId: checkout.id,
      method: 'card',
      outcome: declined ? 'failed' : 'succeeded',
      failureReason: declined ? 'card_declined' : null,
      card: { network: card.network, last4: card.last4 },
      authorizationCode: declined ? null : 'SANDBOX',
      channel: 'one_time_payment',
      paymentMethodId: body.payment_method_id,
    });
    return {
      // The hosted one-time payment is the payment's `paymentable` (`on_`): the intent's payment id.
      id: intentRow(ctx, result.intentId)!.payment_id,
      paid: !declined,
      amount_in_cents: checkout.amount_in_cents,
      currency: checkout.currency,
      checkout_id: checkout.id,
      payment_intent_id: result.paymentIntentId,
      payment_method_id: body.payment_method_id,
      customer_id: card.customer_id,
    };
  });
}

/**
 * The saved card a `pay_m_` id names in this account and environment: a subscription's card on file
 * (its sandbox outcome set by the `advance` helper), else a card a paid checkout saved.
 */
function savedCardOf(
  ctx: AppContext,
  account: Account,
  id: string,
): { customer_id: string | null; network: string; last4: string; sandbox_outcome: string | null } | undefined {
  const sub = new SubscriptionsStore(ctx.db).byPaymentMethod(account.id, account.live_mode, id);
  if (sub?.card_last4)
    return { customer_id: sub.customer_id, network: sub.card_network ?? 'card', last4: sub.card_last4, sandbox_outcome: sub.sandbox_outcome };
  const saved = savedCard(ctx, account, id);
  return saved ? { customer_id: saved.customer_id, network: saved.card_network, last4: saved.card_last4, sandbox_outcome: null } : undefined;
}

export function oneTimePaymentRoutes(app: ApiApp, ctx: AppContext): void {
  app.post(
    '/one_time_payments',
    {
      schema: {
        tags: ['payments'],
        body: OneTimePaymentBody,
        response: { 201: OneTimePaymentSchema, 402: ErrorSchema, ...errorBodies(400, 401, 403, 404, 422, 429) },
      },
    },
    async (req, reply) =>
      sendCommitted(
        ctx.db,
        req,
        reply,
        (r: Charged) => (r.paid ? 201 : 402),
        () => chargeSavedCard(ctx, requireAccount(req), req.body),
        ({ paid, ...r }) =>
          paid
            ? { ...r, status: 'paid' as const, object: 'one_time_payment' as const }
            : new ApiError('card_declined', { extra: { id: r.id, checkout_id: r.checkout_id, payment_intent_id: r.payment_intent_id } }).body(),
      ),
  );
}
