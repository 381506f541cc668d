import { registerFeedApplier } from '../../sync/feed.js';
import { intentRow, setIntentTaxInvoiceUrl } from '../intents/service.js';
import { applyCentralPaymentTaxInvoiceUrl } from '../payments/service.js';

// The central's tax invoice URL for a sale this box holds (its own, pushed, or one it learnt from
// the feed): set on the intent and, for a payment, on its payment intent. A sale this box does not
// hold is skipped (its `intent` change carries the URL when it comes). No events.
registerFeedApplier('tax_invoice_url', (ctx, change) => {
  const p = change.payload as { intent_id?: string; tax_invoice_url?: string | null; at?: string };
  if (typeof p.intent_id !== 'string') return;
  const intent = intentRow(ctx, p.intent_id);
  if (!intent || intent.account_id !== change.account_id) return;
  const url = p.tax_invoice_url ?? null;
  setIntentTaxInvoiceUrl(ctx, intent.id, url);
  if (intent.type === 'payment') applyCentralPaymentTaxInvoiceUrl(ctx, intent.legacy_id, url, p.at ?? change.created_at);
});
