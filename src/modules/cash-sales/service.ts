import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { groupCommit } from '../../db/group-commit.js';
import { newId } from '../../ids.js';
import { invalid } from '../../errors.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import type { Account } from '../../accounts/service.js';
import { assertAccountCurrency, MAX_LINE_CENTS } from '../../money.js';
import { insertPaidCheckout } from '../checkouts/service.js';
import { customerById, getCustomer, markCustomerLive } from '../customers/service.js';
import { createIntent } from '../intents/service.js';
import { intentDocument } from '../intents/service.js';
import { legacyPaymentIntentPayload } from '../../events/payloads.js';
import { oneTimePaymentable } from '../payments/service.js';
import { recordTaxInvoice, taxInvoicingEnabled, tryIssue } from '../tax-invoices/service.js';
import type { TaxInvoiceRequest } from '../tax-invoices/service.js';
import { cashSalesStore } from './store.js';
import type { CashSale, CashSaleBody } from './schema.js';

/**
 * Records a sale collected in cash (spec 4.4, gaps.md): no fee, no ledger row, the balance is
 * untouched. One transaction writes the paid checkout, the unified intent (in_), the cash intent
 * (ca_), the invoice record, `intent.succeeded` (and `cash_intent.succeeded` for legacy-format
 * accounts) and the `cash_sale` sync record.
 *
 * The DTE is asked for before that transaction, never between the commit and the response: a
 * crash there would leave an Idempotency-Key unanswered and let a retry record the sale twice. A
 * provider that cannot be reached leaves the invoice pending for the worker (`tax_invoice_url` null).
 */
export async function createCashSale(
  ctx: AppContext,
  account: Account,
  body: CashSaleBody,
  /** Runs last inside the sale's transaction: the route stores its idempotent answer there. */
  inTransaction?: (sale: CashSale) => void,
): Promise<CashSale> {
  const amount = body.amount_in_cents;
  if (!Number.isInteger(amount) || amount < 1 || amount > MAX_LINE_CENTS) throw invalid({ amount_in_cents: `must be an integer from 1 to ${MAX_LINE_CENTS}` });
  const currency = body.currency ?? account.default_currency;
  assertAccountCurrency(account.currencies, currency);
  const customerId = body.customer_id ?? null;
  if (customerId && !getCustomer(ctx, account, customerId)) throw invalid({ customer_id: 'does not exist' });
  const taxId = body.tax_id ?? null;
  const description = body.description ?? null;
  const intentId = newId('in');
  const cashId = newId('ca');

  let invoice: { req: TaxInvoiceRequest; outcome: Awaited<ReturnType<typeof tryIssue>> } | undefined;
  if (taxId && taxInvoicingEnabled(ctx, account)) {
    const req: TaxInvoiceRequest = {
      invoice_id: newId('dte'),
      intent_id: intentId,
      seller: { account_id: account.id, tax_id: account.tax_id, tax_name: account.tax_name },
      buyer_tax_id: taxId,
      currency,
      total_in_cents: amount,
      lines: [{ description: description ?? 'Venta en efectivo', amount_in_cents: amount, quantity: 1, tax_category: 'good' }],
      issued_at: isoTime(ctx.clock.now()),
    };
    invoice = { req, outcome: await tryIssue(ctx, req, account.live_mode) };
  }

  // Sales that arrive together share one commit (see group-commit.ts); each keeps its own savepoint.
  return groupCommit(ctx.db, () => {
    const at = isoTime(ctx.clock.now());
    const scope = { accountId: account.id, liveMode: account.live_mode };
    const checkout = insertPaidCheckout(ctx, account, {
      items: [{ name: description ?? 'Cash sale', amount_in_cents: amount, currency, quantity: 1, tax_category: 'good', product_id: null, price_id: null }],
      currency,
      customerId,
      intentId,
    });
    const url = invoice?.outcome.issued?.url ?? null;
    createIntent(ctx, {
      id: intentId,
      ...scope,
      type: 'cash',
      status: 'succeeded',
      legacyId: cashId,
      amountInCents: amount,
      currency,
      customerId,
      checkoutId: checkout.id,
      taxInvoiceUrl: url,
      details: { description, tax_id: taxId, fee: 0, channel: 'cash' },
    });
    const cash = {
      id: cashId,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      intent_id: intentId,
      checkout_id: checkout.id,
      amount_in_cents: amount,
      currency,
      description,
      tax_id: taxId,
      customer_id: customerId,
      created_at: at,
    };
    cashSalesStore(ctx.db).insert(cash);
    if (invoice) recordTaxInvoice(ctx, account, invoice.req, invoice.outcome);
    // Cash collected by a live account is a real payment: it makes the customer live (spec 5 rule 7).
    if (customerId && account.live_mode) markCustomerLive(ctx, customerId);

    const doc = intentDocument(ctx, intentId)!;
    ctx.outbox.emit({ ...scope, type: 'intent.succeeded', payload: doc, objectId: intentId });
    if (account.event_format === 'both') {
      const customer = customerId ? customerById(ctx, customerId) : undefined;
      ctx.outbox.emit({
        ...scope,
        type: 'cash_intent.succeeded',
        objectId: cashId,
        // The same builder as every legacy payment event (and the test-send): a cash sale carries
        // fee and payment-method fields like the others, with no fee and no card.
        payload: legacyPaymentIntentPayload({
          id: cashId,
          event_type: 'cash_intent.succeeded',
          created_at: at,
          checkout: {
            id: checkout.id,
            status: checkout.status,
            payment: {
              id: cashId,
              paymentable: oneTimePaymentable(
                cashId,
                customer ? { ...customer, tax_id: taxId ?? customer.tax_id } : taxId ? { full_name: null, tax_id: taxId, phone: null } : undefined,
              ),
            },
            payment_method: { id: cashId, type: 'cash', card: null },
            transfer_setups: [],
            metadata: checkout.metadata,
          },
          failure_reason: null,
          amount_in_cents: amount,
          currency,
          fee: 0,
          vat_withheld: 0,
          vat_withheld_currency: currency,
          customer: customer ? { email: customer.email, full_name: customer.full_name, id: customer.id } : null,
          product_id: null,
          invoice: { id: intentId, tax_invoice_url: url },
        }),
      });
    }
    const sale: CashSale = {
      id: intentId,
      cash_intent_id: cashId,
      status: 'succeeded',
      amount_in_cents: amount,
      currency,
      description,
      tax_id: taxId,
      tax_invoice_url: url,
      customer_id: customerId,
      checkout: { id: checkout.id, status: checkout.status, latest_intent: { id: intentId } },
      created_at: at,
    };
    appendSyncRecord(ctx.db, { kind: 'cash_sale', ...scope, createdAt: at, id: `sync_${cashId}`, payload: { sale, cash_intent: cash, intent: doc } });
    inTransaction?.(sale);
    return sale;
  });
}
