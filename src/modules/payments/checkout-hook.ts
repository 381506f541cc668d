import type { CheckoutHooks } from '../checkouts/schema.js';
import { customerById } from '../customers/service.js';
import { intentRow } from '../intents/service.js';
import { oneTimePaymentable } from './legacy.js';
import { paymentsStore } from './store.js';

/** The hosted names of a payment method (hosted section 3.2); posd's others keep their own. */
const METHOD_TYPE: Record<string, string> = { card: 'card', terminal: 'card', bank_transfer: 'bank_transfer_receiver' };

/**
 * A checkout's `payment` and `payment_method` (hosted section 3.2), the same objects the legacy
 * `payment_intent.*` payload carries under `checkout`: from the payment intent the checkout names,
 * null while it names none (unpaid). `payment.id` is the intent's payment id (`on_`), as in the
 * unified payload; a subscription's charge names the subscription as its paymentable.
 */
export const paymentCheckoutHooks: CheckoutHooks = {
  describe(ctx, checkout) {
    const pa = checkout.payment_intent_id ? paymentsStore(ctx.db).byId(checkout.payment_intent_id) : undefined;
    if (!pa) return {};
    const paymentId = intentRow(ctx, pa.intent_id)?.payment_id ?? pa.intent_id;
    const customer = checkout.customer_id ? customerById(ctx, checkout.customer_id) : undefined;
    const { type: _t, id: _i, ...payer } = oneTimePaymentable(paymentId, customer);
    const subscriptionId = checkout.metadata.subscription_id;
    return {
      payment: {
        id: paymentId,
        paymentable:
          typeof subscriptionId === 'string' ? { type: 'Subscription', id: subscriptionId, ...payer } : { type: 'OneTimePayment', id: paymentId, ...payer },
      },
      payment_method: {
        // The method's own id (pay_m_), one per saved card; the pa_ id stays the payment intent's.
        id: pa.payment_method_id,
        type: METHOD_TYPE[pa.method] ?? pa.method,
        card: pa.card_last4 ? { last4: pa.card_last4, network: pa.card_network ?? '' } : null,
      },
    };
  },
};
