import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import type { Account } from '../../accounts/service.js';
import { setIntentTaxInvoiceUrl } from '../intents/service.js';
import { liveCertifierMissing, NO_LIVE_CERTIFIER, taxInvoiceProvider, type IssuedTaxInvoice, type TaxInvoiceRequest } from './provider.js';
import { taxInvoicesStore } from './store.js';
import { appendFeedChange } from '../../outbox/feed-changes.js';

/**
 * At a central, an intent's tax invoice URL, once known, reaches the account's boxes (feed kind
 * `tax_invoice_url`), in the transaction that records it, so a receipt reprinted at the counter
 * carries it. A no-op at a store.
 */
export function publishTaxInvoiceUrl(ctx: AppContext, intent: { id: string; account_id: string; live_mode: number }, url: string | null): void {
  const at = isoTime(ctx.clock.now());
  appendFeedChange(ctx.db, {
    kind: 'tax_invoice_url',
    accountId: intent.account_id,
    liveMode: intent.live_mode === 1,
    objectId: intent.id,
    payload: { intent_id: intent.id, tax_invoice_url: url, at },
    createdAt: at,
  });
}

/** Invoicing is on by configuration; an account's `tax_invoicing_enabled` setting overrides it. */
export function taxInvoicingEnabled(ctx: AppContext, account: Account): boolean {
  const v = account.settings.tax_invoicing_enabled;
  return typeof v === 'boolean' ? v : ctx.config.money.tax_invoicing.enabled;
}

/** Asks the provider once; null when it cannot be reached (the caller records a pending invoice). */
export async function tryIssue(ctx: AppContext, req: TaxInvoiceRequest, liveMode: boolean): Promise<{ issued: IssuedTaxInvoice | null; error: string | null }> {
  // Kept pending with the reason, never fabricated: an operator who configures a certifier later
  // sees these issued by the worker.
  if (liveMode && liveCertifierMissing(ctx)) return { issued: null, error: NO_LIVE_CERTIFIER };
  try {
    return { issued: await taxInvoiceProvider(ctx).issue(req), error: null };
  } catch (err) {
    ctx.log.warn({ err, invoice_id: req.invoice_id }, 'tax invoice provider unreachable; the invoice will be retried');
    return { issued: null, error: (err as Error).message };
  }
}

/** Records the invoice of an intent inside the sale's transaction: issued already, or pending for the worker. */
export function recordTaxInvoice(
  ctx: AppContext,
  account: Account,
  req: TaxInvoiceRequest,
  outcome: { issued: IssuedTaxInvoice | null; error: string | null },
): void {
  const at = isoTime(ctx.clock.now());
  taxInvoicesStore(ctx.db).insert({
    id: req.invoice_id,
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    intent_id: req.intent_id,
    tax_id: req.buyer_tax_id,
    status: outcome.issued ? 'issued' : 'pending',
    document_id: outcome.issued?.document_id ?? null,
    url: outcome.issued?.url ?? null,
    attempts: 1,
    last_error: outcome.error,
    request: JSON.stringify(req),
    created_at: at,
    issued_at: outcome.issued ? at : null,
  });
  if (outcome.issued) publishTaxInvoiceUrl(ctx, { id: req.intent_id, account_id: account.id, live_mode: account.live_mode ? 1 : 0 }, outcome.issued.url);
}

/**
 * Issues every pending invoice it can, oldest first, and fills the intent's `tax_invoice_url`.
 * Returns how many were issued. Safe to run twice at once: the provider is idempotent by invoice id
 * and only the first `pending -> issued` update wins.
 */
export async function retryPendingTaxInvoices(ctx: AppContext, limit = 50): Promise<number> {
  const store = taxInvoicesStore(ctx.db);
  let issued = 0;
  for (const row of store.pending(limit)) {
    if (ctx.shutdown.aborted) break;
    const { issued: doc, error } = await tryIssue(ctx, JSON.parse(row.request) as TaxInvoiceRequest, row.live_mode === 1);
    if (error === NO_LIVE_CERTIFIER) continue; // not a provider outage: sandbox invoices behind it still go
    tx(ctx.db, () => {
      if (!doc) return store.markFailed(row.id, error ?? 'unknown error');
      if (store.markIssued(row.id, doc.document_id, doc.url, isoTime(ctx.clock.now()))) {
        setIntentTaxInvoiceUrl(ctx, row.intent_id, doc.url);
        publishTaxInvoiceUrl(ctx, { id: row.intent_id, account_id: row.account_id, live_mode: row.live_mode }, doc.url);
        issued++;
      }
    });
    if (!doc) break; // the provider is down: the next round tries again
  }
  return issued;
}

/** Retries invoices the provider could not issue at sale time, every `retry_interval_ms`. */
export function taxInvoiceWorker(ctx: AppContext): Worker {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  const tick = () => {
    if (running || ctx.shutdown.aborted) return;
    running = retryPendingTaxInvoices(ctx)
      .catch((err) => ctx.log.error({ err }, 'tax invoice retry failed'))
      .finally(() => (running = undefined));
  };
  return {
    name: 'tax-invoices',
    start() {
      timer = setInterval(tick, ctx.config.money.tax_invoicing.retry_interval_ms);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}

export interface TaxInvoicingState {
  /** Who signs live invoices: `http` (a configured certifier), `embedded` (one put in place in process), or `none`. */
  live_certifier: 'http' | 'embedded' | 'none';
  /** Why live sales get no `tax_invoice_url`, when they do not. */
  reason: string | null;
  /** Live invoices waiting for a certifier. */
  live_waiting: number;
}

/** What the status page shows about tax invoicing: a live box without a certifier says so. */
export function taxInvoicingState(ctx: AppContext): TaxInvoicingState {
  const missing = liveCertifierMissing(ctx);
  return {
    live_certifier: missing ? 'none' : ctx.config.money.tax_invoicing.provider === 'http' ? 'http' : 'embedded',
    reason: missing && ctx.config.money.tax_invoicing.enabled ? NO_LIVE_CERTIFIER : null,
    live_waiting: taxInvoicesStore(ctx.db).livePending(),
  };
}

// The module's front: what other modules use of the certifier client and the feed.
export { taxInvoiceProvider, type TaxInvoiceRequest } from './provider.js';
export { taxInvoiceUrlFeed } from './feed.js';
