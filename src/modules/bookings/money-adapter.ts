import { ApiError } from '../../errors.js';
import { createCheckout, getCheckout, type Checkout } from '../checkouts/service.js';
import { refundPaymentIntent } from '../refunds/service.js';
import { findOrCreateCustomer, getCustomer, type Customer } from '../customers/service.js';
import type { MoneyPort, PortCheckout, PortCustomer } from './money-port.js';

function customer(c: Customer): PortCustomer {
  return { id: c.id, email: c.email, full_name: c.full_name, phone: c.phone };
}

function checkout(c: Checkout): PortCheckout {
  return { id: c.id, status: c.status, url: c.url, paymentIntentIds: c.payment_intent_id ? [c.payment_intent_id] : [] };
}

/** The money area's own functions behind the port scheduling uses. */
export const moneyPort: MoneyPort = {
  findOrCreateCustomer: (ctx, account, input) => customer(findOrCreateCustomer(ctx, account, input)),
  getCustomer: (ctx, account, id) => {
    const c = getCustomer(ctx, account, id);
    return c ? customer(c) : undefined;
  },
  createCheckout: (ctx, account, input) => checkout(createCheckout(ctx, account, input)),
  getCheckout: (ctx, account, id) => {
    const c = getCheckout(ctx, account, id);
    return c ? checkout(c) : undefined;
  },
  refundPaymentIntent: (ctx, account, id) => {
    try {
      return { id: refundPaymentIntent(ctx, account, id, { reason: 'booking' }).id };
    } catch (err) {
      // Refunded already (at the counter, POST /refunds): the customer has the money back, so the
      // booking counts it as refunded instead of failing on every retry.
      if (err instanceof ApiError && err.code === 'already_refunded' && typeof err.extra.refund_id === 'string') return { id: err.extra.refund_id };
      throw err;
    }
  },
};
