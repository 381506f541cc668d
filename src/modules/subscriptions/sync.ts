import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { PushKind, SyncOrigin } from '../../sync/shared/registry.js';
import { nextState } from '../../lifecycle.js';
import { transitionRefusal, ownerRefusal, payloadTimeRefusal, type CheckRefusal, type CheckedRecord } from '../../sync/shared/record-checks.js';
import { subscriptionMachine, type SubscriptionEvent, type SubscriptionStatus } from './machine.js';
import { subscriptionDetail } from './document.js';
import { SubscriptionsStore, type InvoiceItemRow, type SubscriptionItemRow, type SubscriptionRow } from './store.js';

/**
 * The `subscription` record of every change made at this box: the subscription as the API answers
 * it (items and pending one-time charges included), plus the rows the central writes with the same
 * ids and times.
 */
export type SubscriptionRecord = ReturnType<typeof subscriptionDetail> & {
  row: SubscriptionRow;
  item_rows: SubscriptionItemRow[];
  invoice_item_rows: InvoiceItemRow[];
};

export function subscriptionRecord(store: SubscriptionsStore, row: SubscriptionRow): Record<string, unknown> {
  const record: SubscriptionRecord = {
    ...subscriptionDetail(store, row),
    row,
    item_rows: store.items(row.id),
    invoice_item_rows: store.pendingInvoiceItems(row.id),
  };
  return record;
}

/** The fields of a `subscription` record the central relies on (a record of an older posd lacks the rows). */
export const SubscriptionPayload = Type.Object({
  row: Type.Object({ id: Type.String(), status: Type.String(), updated_at: Type.String(), current_period_end: Type.String() }),
  item_rows: Type.Array(Type.Unknown()),
  invoice_item_rows: Type.Array(Type.Unknown()),
});

/** Columns that are the central's own, not the store's state. */
const SELF = new Set<string>(['version', 'origin_store_id']);

/**
 * A subscription made or changed at a store, applied at the central (sync): written with the
 * store's ids and times when absent (the store bills it: the central's biller skips it), else the
 * state carried when it is not older than the central's, its added items written once by id and
 * those no longer carried marked removed at the record's time, new one-time charges written once.
 * No `subscription.*` events: the store's arrive as `event` records. Returns a refusal, or null.
 */
export function applyStoreSubscription(ctx: AppContext, accountId: string, storeId: string | null, record: SubscriptionRecord): string | null {
  const store = new SubscriptionsStore(ctx.db);
  const row: SubscriptionRow = { ...record.row, account_id: accountId };
  const existing = store.get(row.id);
  if (existing && (existing.account_id !== accountId || existing.live_mode !== row.live_mode))
    return `subscription ${row.id} belongs to another account at the central`;
  if (existing && existing.updated_at > row.updated_at) return null;
  // The same state again (a replay) is not a change: the row's version moves only on a real one.
  if (existing) {
    // The same state again (a replay) is not a change: the row's version moves only on a real one.
    const differs = (Object.keys(row) as Array<keyof SubscriptionRow>).some((k) => !SELF.has(k) && k in existing && existing[k] !== row[k]);
    if (differs) store.save({ ...row, version: existing.version });
  } else {
    store.insert({ ...row, version: 0 });
    if (storeId) store.setOrigin(row.id, storeId);
  }
  const carried = new Set(record.item_rows.map((i) => i.id));
  for (const item of record.item_rows) if (!store.hasItem(item.id)) store.insertItem({ ...item, account_id: accountId });
  for (const item of store.items(row.id)) if (!carried.has(item.id)) store.removeItem(row.id, item.id, row.updated_at);
  for (const inv of record.invoice_item_rows) if (!store.hasInvoiceItem(inv.id)) store.insertInvoiceItem({ ...inv, account_id: accountId });
  return null;
}

/** Every event the machine knows, with each guard's variants: a step is allowed when one of them takes it. */
const EVENTS: SubscriptionEvent[] = [
  { type: 'CHARGE_SUCCEEDED' },
  { type: 'CHARGE_FAILED', finalAttempt: false },
  { type: 'CHARGE_FAILED', finalAttempt: true },
  { type: 'CHARGE_FAILED', finalAttempt: false, trial: true },
  { type: 'PAUSE' },
  { type: 'RESUME' },
  { type: 'CANCEL' },
  { type: 'REACTIVATE', withinPeriod: true },
];

/**
 * What the central's state must allow for a pushed subscription (issue 32, at projection): the
 * row is in the record's environment; a subscription the central holds is the record's account's
 * and, unless the record is older (the applier skips it), moves from its status to the record's by
 * its machine (any run of its events: a final state stays final); the change's time is
 * neither after its record nor before the store.
 */
function checkStoreSubscription(ctx: AppContext, rec: CheckedRecord & { payload: SubscriptionRecord }, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const row = rec.payload.row;
  if ((row.live_mode === 1) !== rec.live_mode) {
    return {
      code: 'inconsistent_payload',
      field: 'payload.row.live_mode',
      reason: `a ${rec.live_mode ? 'live' : 'test'} record carries a subscription of the other environment`,
    };
  }
  const existing = new SubscriptionsStore(ctx.db).get(row.id);
  if (existing) {
    const foreign = ownerRefusal(rec, existing, 'payload.row.id', `subscription ${row.id}`);
    if (foreign) return foreign;
    if (existing.updated_at > row.updated_at) return null;
    const next = (s: string) => EVENTS.map((e) => nextState(subscriptionMachine, s as SubscriptionStatus, e));
    const refused = transitionRefusal(`subscription ${row.id}`, next, existing.status, row.status);
    if (refused) return refused;
  }
  return payloadTimeRefusal(ctx, rec, origin, 'payload.row.updated_at', row.updated_at);
}

/** Subscriptions carry their state after the change (`subscription`); the store keeps running their timers. Counted only. */
export const subscriptionPush: PushKind<SubscriptionRecord> = {
  payload: SubscriptionPayload,
  malformed: 'subscription record without row or items (written by an older posd?)',
  check: (ctx, record, origin) => checkStoreSubscription(ctx, record, origin),
  apply: (ctx, record, origin) => applyStoreSubscription(ctx, record.account_id, origin.restoring ? null : origin.storeId, record.payload),
  totals: () => null,
};
