import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import type { Checkout, CheckoutItem } from './schema.js';

/** A checkout's lines as priced: new (no id yet) or changed. */
export interface CheckoutPriceDraft {
  /** Null for a checkout being created. */
  checkoutId: string | null;
  items: Array<Pick<CheckoutItem, 'amount_in_cents' | 'quantity' | 'product_id'>>;
  currency: string;
  customer_id: string | null;
  /** Codes typed at creation; undefined when a changed checkout is priced again with the codes it carries. */
  coupon_codes?: string[];
}

export interface CheckoutPrice {
  discount_in_cents: number;
  total_in_cents: number;
  /** Inside the checkout's transaction, once its row exists: keep what this price applied. */
  record(checkoutId: string): void;
}

/** The payment that made a checkout paid. */
export interface CheckoutPaid {
  paymentIntentId: string;
  card: { network: string; last4: string } | null;
  /** The payment method's hosted id (`pay_m_`): a subscription started by the payment keeps its card under it. */
  paymentMethodId?: string | null;
}

/** What other modules add to a checkout's answer (hosted section 3.2); each key null when it has none. */
export interface CheckoutDescription {
  payment: CheckoutPaymentView | null;
  payment_method: CheckoutPaymentMethodView | null;
  /** The coupon of `discount.coupon`. */
  coupon: ({ id: string } & Record<string, unknown>) | null;
}
export interface CheckoutPaymentView {
  id: string;
  paymentable: {
    type: 'OneTimePayment' | 'Subscription';
    id: string;
    tax_name: string | null;
    tax_id: string | null;
    address: string | null;
    phone_number: string | null;
  };
}
export interface CheckoutPaymentMethodView {
  id: string;
  type: string;
  card: { last4: string; network: string } | null;
}
/** The checkout as its own module knows it, given to `describe`. */
export type DescribedCheckout = Pick<Checkout, 'id' | 'account_id' | 'live_mode' | 'status' | 'payment_intent_id' | 'customer_id' | 'metadata'>;

/**
 * What other modules add to a checkout's life, declared in their index.ts (`checkout`) so that
 * checkouts and payments call them without importing them: coupons price it and count their
 * redemptions once it is paid, contracts hold its payment until signed, subscriptions start with
 * its payment.
 */
export interface CheckoutHooks {
  /** The amount to charge for the lines (spec 2.7: coupons). At most one module prices. */
  price?(ctx: AppContext, account: Account, draft: CheckoutPriceDraft): CheckoutPrice;
  /** Before a successful payment settles: throw an ApiError to refuse it (spec 4.8). */
  beforePay?(ctx: AppContext, checkoutId: string): void;
  /** Inside the payment's transaction, after its own events, for a paid checkout. */
  afterPay?(ctx: AppContext, account: Account, checkout: Checkout, paid: CheckoutPaid): void;
  /**
   * The parts of the checkout's answer this module keeps (payments: `payment`, `payment_method`;
   * coupons: `discount.coupon`). Reads only: never builds a checkout (that would call it again).
   */
  describe?(ctx: AppContext, checkout: DescribedCheckout): Partial<CheckoutDescription>;
}

declare module '../../api/module.js' {
  interface PosdModule {
    checkout?: CheckoutHooks;
  }
}

declare module '../../context.js' {
  interface Registry {
    /** Every module's checkout hooks as one, in module order. */
    checkout: Required<CheckoutHooks>;
  }
}

/** Without a pricing module a checkout costs the sum of its lines. */
function listPrice(_ctx: AppContext, _account: Account, draft: CheckoutPriceDraft): CheckoutPrice {
  const total = draft.items.reduce((s, i) => s + i.amount_in_cents * (i.quantity ?? 1), 0);
  return { discount_in_cents: 0, total_in_cents: total, record() {} };
}

/** The modules' hooks as one: before and after hooks run in module order. */
export function checkoutHooksOf(modules: ReadonlyArray<{ name: string; checkout?: CheckoutHooks }>): Required<CheckoutHooks> {
  const declared = modules.filter((m) => m.checkout).map((m) => ({ name: m.name, hooks: m.checkout! }));
  const pricing = declared.filter((d) => d.hooks.price);
  if (pricing.length > 1) throw new Error(`checkouts are priced by one module; ${pricing.map((d) => d.name).join(' and ')} both declare a price`);
  const before = declared.flatMap((d) => (d.hooks.beforePay ? [d.hooks.beforePay] : []));
  const after = declared.flatMap((d) => (d.hooks.afterPay ? [d.hooks.afterPay] : []));
  const describers = declared.flatMap((d) => (d.hooks.describe ? [d.hooks.describe] : []));
  return {
    describe: (ctx, checkout) => describers.reduce<Partial<CheckoutDescription>>((out, fn) => Object.assign(out, fn(ctx, checkout)), {}),
    price: pricing[0]?.hooks.price ?? listPrice,
    beforePay: (ctx, checkoutId) => before.forEach((fn) => fn(ctx, checkoutId)),
    afterPay: (ctx, account, checkout, paid) => after.forEach((fn) => fn(ctx, account, checkout, paid)),
  };
}
