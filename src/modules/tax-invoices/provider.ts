import { createHash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { undici } from '../../system/undici.js';
import { ADDRESS_REFUSED, guardedAgent, literalRefused, outboundGuard, type UrlGuard } from '../../system/url-guard.js';
import type { AppContext } from '../../context.js';
import { publicBaseUrl } from '../../config.js';

export interface TaxInvoiceLine {
  description: string;
  amount_in_cents: number;
  quantity: number;
  tax_category: 'good' | 'service';
}

/** What a DTE needs: who sells, who buys, what. `invoice_id` is our id and the provider's idempotency key. */
export interface TaxInvoiceRequest {
  invoice_id: string;
  intent_id: string;
  seller: { account_id: string; tax_id: string | null; tax_name: string | null };
  buyer_tax_id: string;
  currency: string;
  total_in_cents: number;
  lines: TaxInvoiceLine[];
  issued_at: string;
}

export interface IssuedTaxInvoice {
  document_id: string;
  url: string;
}

/** A tax-invoice (DTE) certifier. `issue` must be idempotent by `invoice_id`: the worker retries. */
export interface TaxInvoiceProvider {
  issue(req: TaxInvoiceRequest): Promise<IssuedTaxInvoice>;
}

/**
 * The sandbox certifier: issues at once, in process. The document id is derived from our invoice id,
 * so issuing twice gives the same document, as a real certifier does for a repeated request.
 */
export class SandboxTaxInvoiceProvider implements TaxInvoiceProvider {
  constructor(private readonly baseUrl: string) {}

  async issue(req: TaxInvoiceRequest): Promise<IssuedTaxInvoice> {
    const documentId = `DTE-${createHash('sha256').update(req.invoice_id).digest('hex').slice(0, 16).toUpperCase()}`;
    return { document_id: documentId, url: `${this.baseUrl}/tax_invoices/${documentId}` };
  }
}

/**
 * A certifier over HTTP: POST the request as JSON (with `Idempotency-Key: invoice_id`), expect 2xx
 * and `{document_id, url}`. Anything else, including a timeout, is "unreachable" and retried later.
 */
export class HttpTaxInvoiceProvider implements TaxInvoiceProvider {
  private readonly agent: Dispatcher | undefined;

  /**
   * With a guard, the certifier is reached like any outbound URL (docs/security.md): never an
   * inward address unless `webhooks.allow_cidrs` admits it, checked on the address the socket uses.
   */
  constructor(
    private readonly url: string,
    private readonly apiKey: string,
    private readonly timeoutMs: number,
    private readonly guard?: UrlGuard,
  ) {
    this.agent = guard ? guardedAgent(guard, { timeoutMs }) : undefined;
  }

  async issue(req: TaxInvoiceRequest): Promise<IssuedTaxInvoice> {
    if (this.guard && literalRefused(this.guard, this.url)) throw new Error(`tax invoice provider: ${ADDRESS_REFUSED}`);
    const headers: Record<string, string> = { 'content-type': 'application/json', 'idempotency-key': req.invoice_id };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    const res = await undici().request(this.url, {
      method: 'POST',
      dispatcher: this.agent,
      headers,
      body: JSON.stringify(req),
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`tax invoice provider answered ${res.statusCode}`);
    const body = JSON.parse(text) as Partial<IssuedTaxInvoice>;
    if (typeof body.document_id !== 'string' || typeof body.url !== 'string') throw new Error('tax invoice provider answered without document_id and url');
    return { document_id: body.document_id, url: body.url };
  }
}

const providers = new WeakMap<AppContext, TaxInvoiceProvider>();
const installed = new WeakSet<AppContext>();

/** Why a live sale gets no invoice: the in-process sandbox certifier must never sign a real one. */
export const NO_LIVE_CERTIFIER = 'no tax-invoice certifier is configured for live sales (money.tax_invoicing.provider is sandbox)';

/**
 * The certifier live sales may use, or null: the shipped default (the sandbox certifier) would hand
 * a real buyer a fabricated invoice URL that answers 404, so live mode needs an http certifier (or
 * one an embedder put in place).
 */
export function liveCertifierMissing(ctx: AppContext): boolean {
  return !installed.has(ctx) && ctx.config.money.tax_invoicing.provider === 'sandbox';
}

/** The configured provider, one per context. */
export function taxInvoiceProvider(ctx: AppContext): TaxInvoiceProvider {
  let p = providers.get(ctx);
  if (!p) {
    const c = ctx.config.money.tax_invoicing;
    p =
      c.provider === 'http'
        ? new HttpTaxInvoiceProvider(c.url, c.api_key, c.timeout_ms, outboundGuard(ctx))
        : new SandboxTaxInvoiceProvider(publicBaseUrl(ctx.config));
    providers.set(ctx, p);
  }
  return p;
}

/** Tests and embedders may put their own certifier in place (same contract). */
export function setTaxInvoiceProvider(ctx: AppContext, provider: TaxInvoiceProvider): void {
  providers.set(ctx, provider);
  installed.add(ctx);
}
