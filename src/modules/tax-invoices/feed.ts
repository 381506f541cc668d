import type { AppContext } from '../../context.js';
import type { FeedApplier } from '../../sync/shared/registry.js';
import { intentRow, setIntentTaxInvoiceUrl } from '../intents/service.js';

/** Sets the URL on a payment's own row too (the payments module hands it in, so this file imports no payments code). */
export type PaymentTaxInvoiceUrl = (ctx: AppContext, paymentIntentId: string, url: string | null, at: string) => void;

/**
 * The central's tax invoice URL for a sale this box holds (its own, pushed, or one it learnt from
 * the feed): set on the intent and, for a payment, on its payment intent. A sale this box does not
 * hold is skipped (its `intent` change carries the URL when it comes). No events.
 */
export function taxInvoiceUrlFeed(onPayment: PaymentTaxInvoiceUrl): FeedApplier {
  return (ctx, change) => {
    const p = change.payload as { intent_id?: string; tax_invoice_url?: string | null; at?: string };
    if (typeof p.intent_id !== 'string') return;
    const intent = intentRow(ctx, p.intent_id);
    if (!intent || intent.account_id !== change.account_id) return;
    const url = p.tax_invoice_url ?? null;
    setIntentTaxInvoiceUrl(ctx, intent.id, url);
    if (intent.type === 'payment') onPayment(ctx, intent.legacy_id, url, p.at ?? change.created_at);
  };
}
