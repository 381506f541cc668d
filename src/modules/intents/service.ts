import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { intentsStore, salesTotals, type IntentRow, type IntentTotalRow, type SalesTotalRow } from './store.js';
import { appendFeedChange, feedOrigin } from '../../outbox/feed-changes.js';
import { rowOrigin } from '../../outbox/origins.js';

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
  store.insert(row, rowOrigin(ctx.db));
  // An intent made at a central (an online payment, a sale at the central) reaches the account's
  // boxes. One a box pushed stays that box's: the central holds every box's sales, a box its own
  // (so a pushed cash sale costs no feed row; its ledger rows, if any, do travel).
  if (feedOrigin(ctx.db) === null) publishIntent(ctx, row);
  return row;
}

/** The intent as the feed carries it: the row, `live_mode` a boolean and `details` parsed. */
export type FeedIntent = Omit<IntentRow, 'live_mode' | 'details'> & { live_mode: boolean; details: Record<string, unknown> };

function publishIntent(ctx: AppContext, row: IntentRow): void {
  const payload: FeedIntent = { ...row, live_mode: row.live_mode === 1, details: JSON.parse(row.details) as Record<string, unknown> };
  appendFeedChange(ctx.db, { kind: 'intent', accountId: row.account_id, liveMode: row.live_mode === 1, objectId: row.id, payload, createdAt: row.created_at });
}

/**
 * An intent learnt from the central's feed: inserted with the central's id, payment id and time
 * (numbered with this box's next receipt number: each side numbers its receipts, as the central
 * does for a box's sales), or, when held already, set to the central's status, URL and details.
 */
export function applyCentralIntent(ctx: AppContext, intent: FeedIntent): void {
  const store = intentsStore(ctx.db);
  const details = JSON.stringify(intent.details ?? {});
  if (store.byId(intent.id)) {
    store.setState({ id: intent.id, status: intent.status, raw_status: intent.raw_status, tax_invoice_url: intent.tax_invoice_url, details });
    return;
  }
  store.insert({ ...intent, live_mode: intent.live_mode ? 1 : 0, details, receipt_number: store.nextReceiptNumber(intent.account_id) }, rowOrigin(ctx.db));
}

export function intentRow(ctx: AppContext, id: string): IntentRow | undefined {
  return intentsStore(ctx.db).byId(id);
}

/**
 * A waiting intent's outcome (a bank transfer that arrived, arrived short or was abandoned), inside
 * the caller's transaction; a central publishes the new state to the account's boxes as it does a new intent.
 */
export function setIntentState(ctx: AppContext, id: string, state: { status: IntentStatus; rawStatus: string; details: Record<string, unknown> }): void {
  const store = intentsStore(ctx.db);
  const row = store.byId(id);
  if (!row) throw new Error(`setIntentState: no intent ${id}`);
  store.setState({ id, status: state.status, raw_status: state.rawStatus, tax_invoice_url: row.tax_invoice_url, details: JSON.stringify(state.details) });
  if (feedOrigin(ctx.db) === null) publishIntent(ctx, store.byId(id)!);
}

export function setIntentTaxInvoiceUrl(ctx: AppContext, intentId: string, url: string | null): void {
  intentsStore(ctx.db).setTaxInvoiceUrl(intentId, url);
}

/** Gross live sales (refunds not subtracted) in [fromIso, untilIso), by method and currency. */
export function salesByMethod(
  ctx: AppContext,
  fromIso: string,
  untilIso: string,
  liveMode = true,
  accountIds: string[] | null = null,
  /** At a central: only the intents one store's records wrote (`origin`); null: all. */
  originStoreId: string | null = null,
): SalesTotalRow[] {
  return salesTotals(ctx.db, fromIso, untilIso, liveMode, accountIds, originStoreId);
}

/**
 * Counts and sums of the intents created in [from, until), per account, environment, currency, type
 * and status, of one origin (`null`: written on this box; see `ledgerTotals`). Sync reconciliation
 * compares these between a store and its central. A `pending` intent is left out: nothing of a
 * payment that waits (a bank transfer, a card stored offline) is pushed until it settles.
 */
export function intentTotals(ctx: Pick<AppContext, 'db'>, from: string, until: string, origin: string | null): IntentTotalRow[] {
  return intentsStore(ctx.db).totals(origin, from, until);
}

export { intentDocument, type IntentDocument } from './document.js';
