import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';

/**
 * What scheduling needs from the money area, by the names that area exports (checkouts, payments,
 * refunds, customers). Bookings take it as a dependency so a test can put a fault at this boundary
 * (a refund that fails for chosen seats) without replacing any scheduling code.
 */
export interface PortCustomer {
  id: string;
  email: string | null;
  full_name: string | null;
  phone: string | null;
}

export interface PortCheckout {
  id: string;
  status: string;
  url: string | null;
  /** Payment intents that paid this checkout (a refund names one). */
  paymentIntentIds: string[];
}

export interface CheckoutRequest {
  items: Array<{ name: string; amount_in_cents: number; currency: string; quantity: number }>;
  currency: string;
  customer_id: string;
  metadata: Record<string, string>;
  expires_at: string | null;
}

export interface MoneyPort {
  findOrCreateCustomer(ctx: AppContext, account: Account, input: { email?: string | null; name?: string | null; phone?: string | null }): PortCustomer;
  getCustomer(ctx: AppContext, account: Account, id: string): PortCustomer | undefined;
  createCheckout(ctx: AppContext, account: Account, input: CheckoutRequest): PortCheckout;
  getCheckout(ctx: AppContext, account: Account, id: string): PortCheckout | undefined;
  /** Refunds the full amount of one payment intent; returns the refund id. Throws when it cannot. */
  refundPaymentIntent(ctx: AppContext, account: Account, paymentIntentId: string): Promise<{ id: string }> | { id: string };
}
