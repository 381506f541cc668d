import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { PushKind, SyncOrigin } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import type { Account } from '../../accounts/service.js';
import { checkoutForPage, insertPaidCheckout } from '../checkouts/service.js';
import { createIntent, intentRow } from '../intents/service.js';
import { ownerRefusal, payloadTimeRefusal, type CheckRefusal } from '../../sync/shared/record-checks.js';
import { cashSalesStore, type CashIntentRow } from './store.js';
import type { CashSale } from './schema.js';

/** The `cash_sale` sync record `createCashSale` appends: the sale, its cash intent and its intent document. */
export interface CashSaleRecord {
  sale: CashSale;
  cash_intent: CashIntentRow;
  intent: { payment?: { id?: string }; created_at?: string };
}

/** The fields of a `cash_sale` record the central relies on. */
export const CashSalePayload = Type.Object({
  sale: Type.Object({
    id: Type.String(),
    amount_in_cents: Type.Number(),
    currency: Type.String(),
    created_at: Type.String(),
    checkout: Type.Object({ id: Type.String() }),
  }),
  cash_intent: Type.Object({ id: Type.String() }),
});

/**
 * A cash sale made at a store, applied at the central (sync): the same checkout, intent and cash
 * intent ids and times, no fee and no ledger row (as at the store), no tax-invoice request (the store
 * asked its provider) and no events (the store's events arrive on their own and keep their ids).
 * The central numbers the receipt itself, so a receipt number never collides with one it issued.
 */
export function applyStoreCashSale(ctx: AppContext, account: Account, record: CashSaleRecord): void {
  const { sale, cash_intent: cash } = record;
  if (cashSalesStore(ctx.db).byId(cash.id)) return;
  const scope = { accountId: account.id, liveMode: account.live_mode };
  insertPaidCheckout(ctx, account, {
    id: sale.checkout.id,
    createdAt: sale.created_at,
    items: [
      {
        name: sale.description ?? 'Cash sale',
        amount_in_cents: sale.amount_in_cents,
        currency: sale.currency,
        quantity: 1,
        tax_category: 'good',
        product_id: null,
        price_id: null,
      },
    ],
    currency: sale.currency,
    customerId: sale.customer_id,
    intentId: sale.id,
  });
  createIntent(ctx, {
    id: sale.id,
    ...scope,
    type: 'cash',
    status: 'succeeded',
    legacyId: cash.id,
    paymentId: record.intent.payment?.id,
    createdAt: record.intent.created_at ?? sale.created_at,
    amountInCents: sale.amount_in_cents,
    currency: sale.currency,
    customerId: sale.customer_id,
    checkoutId: sale.checkout.id,
    taxInvoiceUrl: sale.tax_invoice_url,
    details: { description: sale.description, tax_id: sale.tax_id, fee: 0, channel: 'cash' },
  });
  cashSalesStore(ctx.db).insert({ ...cash, account_id: account.id, live_mode: account.live_mode ? 1 : 0 });
}

/**
 * What the central's state must allow for a pushed cash sale (issue 32, at projection): the sale
 * makes its checkout and intent, so neither may be one the central holds already (another
 * account's, or a checkout paid otherwise), and the sale's time is neither after its record nor
 * before the store. A sale the central holds already passes (applied once).
 */
export function checkStoreCashSale(ctx: AppContext, rec: CheckedCashSale, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const { sale, cash_intent: cash } = rec.payload;
  if (cashSalesStore(ctx.db).byId(cash.id)) return null;
  const checkout = checkoutForPage(ctx, sale.checkout.id);
  if (checkout) {
    const foreign = ownerRefusal(rec, checkout, 'payload.sale.checkout.id', `checkout ${checkout.id}`);
    if (foreign) return foreign;
    return {
      code: 'transition_not_allowed',
      field: 'payload.sale.checkout.id',
      reason: `checkout ${checkout.id} is ${checkout.status} at the central; a cash sale makes its own checkout, paid`,
    };
  }
  const intent = intentRow(ctx, sale.id);
  if (intent) return { code: 'duplicate_reference', field: 'payload.sale.id', reason: `intent ${sale.id} is already held at the central` };
  return payloadTimeRefusal(ctx, rec, origin, 'payload.sale.created_at', sale.created_at);
}

type CheckedCashSale = { account_id: string; live_mode: boolean; created_at: string; payload: CashSaleRecord };

/** A cash sale made at the store (`cash_sale`): applied with the store's ids; it weighs its sale's amount. */
export const cashSalePush: PushKind<CashSaleRecord> = {
  payload: CashSalePayload,
  consistent: (p) => p.cash_intent.intent_id === p.sale.id,
  malformed: 'cash_sale record without sale or cash_intent',
  money: (p) => [{ field: 'sale.amount_in_cents', amount: p.sale.amount_in_cents, currency: p.sale.currency }],
  check: (ctx, record, origin) => checkStoreCashSale(ctx, record, origin),
  apply(ctx, record) {
    const account = accountsOf(ctx).account(record.account_id)!;
    applyStoreCashSale(ctx, account, record.payload);
  },
  movesMoney: true,
  totals: (p) => {
    const sale = p.sale as { currency?: unknown; amount_in_cents?: unknown } | undefined;
    return typeof sale?.currency === 'string' && typeof sale.amount_in_cents === 'number'
      ? { currency: sale.currency, amount_in_cents: sale.amount_in_cents }
      : null;
  },
};
