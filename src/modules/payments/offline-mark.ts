import type { PaymentIntentRow } from './store.js';

export interface OfflineMark {
  stored_at: string;
  forwarded_at: string | null;
}

/**
 * A card a terminal approved offline (a stored payment, docs/stored-payments.md), recognisable for
 * good after its outcome, like Stripe's `card_present.offline.stored_at`: on the payment intent's
 * view and in its unified intent's `details.offline`. null for every other payment.
 */
export function offlineMark(r: Pick<PaymentIntentRow, 'offline_stored_at' | 'offline_forwarded_at'>): OfflineMark | null {
  return r.offline_stored_at ? { stored_at: r.offline_stored_at, forwarded_at: r.offline_forwarded_at ?? null } : null;
}
