import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { intentsStore, salesTotals, type IntentRow, type IntentTotalRow, type SalesTotalRow } from './store.js';

export type IntentType = IntentRow['type'];
export type IntentStatus = 'pending' | 'succeeded' | 'failed' | 'canceled' | 'paid';

export interface CreateIntentInput {
  id?: string;
  accountId: string;
  liveMode: boolean;
  type: IntentType;
  status: IntentStatus;
  rawStatus?: string;
  /** The concrete per-method id (pa_, ca_, ...) the legacy events carry. */
  legacyId: string;
  amountInCents: number;
  currency: string;
  customerId: string | null;
  checkoutId: string | null;
  taxInvoiceUrl?: string | null;
  details: Record<string, unknown>;
  /** An intent made at a store keeps its payment id and time at the central (sync). */
  paymentId?: string;
  createdAt?: string;
}

/**
 * Records a unified intent (in_) inside the caller's transaction. The receipt number counts the
 * account's intents from 1; the write lock of the transaction keeps it gap-free and unique.
 */
export function createIntent(ctx: AppContext, input: CreateIntentInput): IntentRow {
  if (!ctx.db.inTransaction) throw new Error('createIntent() outside a transaction');
  const store = intentsStore(ctx.db);
  const row: IntentRow = {
    id: input.id ?? newId('in'),
    account_id: input.accountId,
    live_mode: input.liveMode ? 1 : 0,
    type: input.type,
    status: input.status,
    raw_status: input.rawStatus ?? input.status,
    legacy_id: input.legacyId,
    payment_id: input.paymentId ?? newId('on'),
    receipt_number: store.nextReceiptNumber(input.accountId),
    amount_in_cents: input.amountInCents,
    currency: input.currency,
    customer_id: input.customerId,
    checkout_id: input.checkoutId,
    tax_invoice_url: input.taxInvoiceUrl ?? null,
    details: JSON.stringify(input.details),
    created_at: input.createdAt ?? isoTime(ctx.clock.now()),
  };
  store.insert(row);
  return row;
}

export function intentRow(ctx: AppContext, id: string): IntentRow | undefined {
  return intentsStore(ctx.db).byId(id);
}

export function setIntentTaxInvoiceUrl(ctx: AppContext, intentId: string, url: string | null): void {
  intentsStore(ctx.db).setTaxInvoiceUrl(intentId, url);
}

/** Gross live sales (refunds not subtracted) in [fromIso, untilIso), by method and currency. */
export function salesByMethod(ctx: AppContext, fromIso: string, untilIso: string): SalesTotalRow[] {
  return salesTotals(ctx.db, fromIso, untilIso);
}

/**
 * Counts and sums of the intents created in [from, until), per account, environment, currency, type
 * and status, of one origin (`null`: written on this box; see `ledgerTotals`). Sync reconciliation
 * compares these between a store and its central.
 */
export function intentTotals(ctx: Pick<AppContext, 'db'>, from: string, until: string, origin: string | null): IntentTotalRow[] {
  return intentsStore(ctx.db).totals(origin, from, until);
}

/** A mark to pass to `markIntentOrigin` later in the same transaction. */
export function intentsHighWater(ctx: Pick<AppContext, 'db'>): number {
  return intentsStore(ctx.db).highWater();
}

/** Stamps `origin` on the intents created since `intentsHighWater` answered `after`. */
export function markIntentOrigin(ctx: Pick<AppContext, 'db'>, after: number, origin: string): number {
  return intentsStore(ctx.db).markOrigin(after, origin);
}
