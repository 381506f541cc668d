import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { Value } from '@sinclair/typebox/value';
import type { FeedApplier, PushKind, SyncOrigin } from '../../sync/shared/registry.js';
import { ownerRefusal, payloadTimeRefusal, type CheckRefusal, type CheckedRecord } from '../../sync/shared/record-checks.js';
import { paymentIntentRow } from '../payments/service.js';
import { SyncedLedgerRow, syncedLedgerMoney } from '../ledger/schema.js';
import { accountsOf } from '../../accounts/service.js';
import { hasBalanceTransaction, postBalanceTransaction, type BalanceTransaction } from '../ledger/service.js';
import { disputeStep, type DisputeOutcome } from './machine.js';
import type { DisputeView } from './schema.js';
import { disputesStore, type DisputeRow } from './store.js';
import { appendFeedChange } from '../../outbox/feed-changes.js';
import { disputeView } from './views.js';

/** The `dispute` record (`disputeSyncPayload`): the dispute as it is after the change, and the ledger rows that change posted. */
export interface DisputeRecord {
  change: string;
  dispute: DisputeView;
  balance_transactions: BalanceTransaction[];
}

/** The fields of a `dispute` record the central relies on. */
export const DisputePayload = Type.Object({
  change: Type.String(),
  dispute: Type.Object({
    id: Type.String(),
    payment_intent_id: Type.String(),
    intent_id: Type.String(),
    status: Type.Union(['needs_response', 'under_review', 'won', 'lost'].map((s) => Type.Literal(s))),
    reason: Type.String(),
    amount_in_cents: Type.Number(),
    currency: Type.String(),
    balance_transaction_id: Type.String(),
    created_at: Type.String(),
    updated_at: Type.String(),
  }),
  balance_transactions: Type.Array(Type.Intersect([SyncedLedgerRow, Type.Object({ account_id: Type.String() })])),
});

/**
 * A dispute opened or moved at a store, applied at the central: the dispute row with the store's id
 * and the ledger `dispute` rows that step posted (the hold, and the return of a won dispute), each
 * under the store's id, posted once; the central keeps its own running balance. A step the central's
 * state does not allow (it closed the dispute otherwise meanwhile) is refused, nothing written.
 * Returns the refusal reason, or null when applied. No events: the store's arrive on their own.
 */
export function applyStoreDispute(ctx: AppContext, accountId: string, liveMode: boolean, record: DisputeRecord): string | null {
  const d = record.dispute;
  const store = disputesStore(ctx.db);
  const existing = store.byId(d.id);
  if (existing && existing.account_id !== accountId) return `dispute ${d.id} belongs to another account at the central`;
  const stray = record.balance_transactions.find((b) => b.account_id !== accountId);
  if (stray) return `ledger row ${stray.id} names an account outside dispute ${d.id}`;
  if (existing) {
    if (existing.status === d.status) return null;
    if (d.status === 'needs_response' || !disputeStep(existing.status, d.status as DisputeOutcome)) {
      return `dispute ${d.id} is ${existing.status} at the central; the store's ${d.status} does not follow`;
    }
  }
  for (const b of record.balance_transactions) {
    if (hasBalanceTransaction(ctx, b.id)) continue;
    postBalanceTransaction(ctx, {
      id: b.id,
      createdAt: b.created_at,
      accountId,
      liveMode,
      type: 'dispute',
      amountInCents: b.amount_in_cents,
      feeInCents: b.fee_in_cents,
      currency: b.currency,
      sourceId: d.id,
      sourceType: 'dispute',
      description: b.description,
    });
  }
  if (!existing) {
    const row = disputeRowOf(d, accountId, liveMode);
    store.insert(row);
    publishDispute(ctx, row);
    return null;
  }
  store.setStatus({
    id: d.id,
    from: existing.status,
    status: d.status,
    at: d.updated_at,
    reversal_balance_transaction_id: d.reversal_balance_transaction_id ?? null,
  });
  publishDispute(ctx, store.byId(d.id)!);
  return null;
}

/** The row a dispute is held in, from the view a record or a feed change carries. */
function disputeRowOf(d: DisputeRecord['dispute'] | DisputeView, accountId: string, liveMode: boolean): DisputeRow {
  return {
    id: d.id,
    account_id: accountId,
    live_mode: liveMode ? 1 : 0,
    payment_intent_id: d.payment_intent_id,
    intent_id: d.intent_id,
    status: d.status,
    reason: d.reason,
    amount_in_cents: d.amount_in_cents,
    currency: d.currency,
    balance_transaction_id: d.balance_transaction_id,
    reversal_balance_transaction_id: d.reversal_balance_transaction_id ?? null,
    created_at: d.created_at,
    updated_at: d.updated_at,
    closed_at: d.closed_at ?? null,
  };
}

/**
 * At a central, a dispute opened or moved (there, or applied from a box's record) reaches the
 * account's boxes as a `dispute` feed change, in the transaction of the change, so a box refuses to
 * refund a payment the network disputes (its ledger rows travel on their own as
 * `balance_transaction`). A no-op at a store. A box's own dispute is not sent back to it (origin).
 */
export function publishDispute(ctx: AppContext, row: DisputeRow): void {
  appendFeedChange(ctx.db, {
    kind: 'dispute',
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    objectId: row.id,
    payload: { dispute: disputeView(row) },
    createdAt: row.updated_at,
  });
}

const DisputeFeedPayload = Type.Object({
  dispute: Type.Intersect([DisputePayload.properties.dispute, Type.Object({ account_id: Type.String(), live_mode: Type.Boolean() })]),
});

/**
 * A dispute of the central's (opened or moved there, or at another box) held at this box with the
 * central's id and state: inserted when absent, else brought to the central's status unless the
 * box's copy is newer (central decides; the box's own steps reach the central as records). A
 * dispute of a payment this box already holds under another id is skipped and logged. No events, no
 * sync record; the ledger rows arrive as their own changes.
 */
export const disputeFeed: FeedApplier = (ctx, change) => {
  if (!Value.Check(DisputeFeedPayload, change.payload)) return;
  const d = (change.payload as unknown as { dispute: DisputeView }).dispute;
  const account = accountsOf(ctx).account(d.account_id);
  if (!account || account.live_mode !== d.live_mode) return;
  const store = disputesStore(ctx.db);
  const existing = store.byId(d.id);
  if (!existing) {
    const other = store.byPaymentIntent(d.payment_intent_id);
    if (other) {
      ctx.log.warn(
        { dispute_id: d.id, held: other.id, payment_intent_id: d.payment_intent_id },
        "sync: the central's dispute names a payment this box holds disputed under another id; skipped",
      );
      return;
    }
    store.insert(disputeRowOf(d, account.id, account.live_mode));
    return;
  }
  if (existing.status === d.status || existing.updated_at > d.updated_at) return;
  store.setStatus({ id: d.id, from: existing.status, status: d.status, at: d.updated_at, reversal_balance_transaction_id: d.reversal_balance_transaction_id });
};

/**
 * What the central's state must allow for a pushed dispute step (issue 32, at projection): a
 * dispute the central holds is the record's account's and its machine takes it to the record's
 * status; a new one opens on a succeeded payment of the record's account and environment, in its
 * currency, for no more than it; every ledger row is the account's; the step's time is neither
 * after its record nor before the store. The same step again passes (applied once).
 */
function checkStoreDispute(ctx: AppContext, rec: CheckedRecord & { payload: DisputeRecord }, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const d = rec.payload.dispute;
  const existing = disputesStore(ctx.db).byId(d.id);
  if (existing) {
    const foreign = ownerRefusal(rec, existing, 'payload.dispute.id', `dispute ${d.id}`);
    if (foreign) return foreign;
    if (existing.status === d.status) return null;
    if (d.status === 'needs_response' || !disputeStep(existing.status, d.status as DisputeOutcome)) {
      return {
        code: 'transition_not_allowed',
        field: 'payload.dispute.status',
        reason: `dispute ${d.id} is ${existing.status} at the central; ${d.status} does not follow`,
      };
    }
  } else {
    const field = 'payload.dispute.payment_intent_id';
    const pa = paymentIntentRow(ctx, [rec.account_id], rec.live_mode, d.payment_intent_id);
    if (!pa) return { code: 'unknown_reference', field, reason: `payment ${d.payment_intent_id} is not a payment of account ${rec.account_id} at the central` };
    if (pa.status !== 'succeeded')
      return { code: 'transition_not_allowed', field, reason: `payment ${pa.id} is ${pa.status} at the central; only a succeeded payment is disputed` };
    if (pa.currency !== d.currency)
      return { code: 'invalid_currency', field: 'payload.dispute.currency', reason: `dispute in ${d.currency} of payment ${pa.id} in ${pa.currency}` };
    if (d.amount_in_cents > pa.amount_in_cents) {
      return {
        code: 'dispute_exceeds_payment',
        field: 'payload.dispute.amount_in_cents',
        reason: `dispute of ${d.amount_in_cents} cents; payment ${pa.id} is ${pa.amount_in_cents} cents at the central`,
      };
    }
  }
  const stray = rec.payload.balance_transactions.findIndex((b) => b.account_id !== rec.account_id);
  if (stray >= 0) {
    return {
      code: 'foreign_reference',
      field: `payload.balance_transactions.${stray}.account_id`,
      reason: `a ledger row of dispute ${d.id} names another account`,
    };
  }
  return payloadTimeRefusal(ctx, rec, origin, 'payload.dispute.updated_at', d.updated_at);
}

/** A dispute step made at the store (`dispute`). Only the opening weighs in the totals (a status step holds no new amount). */
export const disputePush: PushKind<DisputeRecord> = {
  payload: DisputePayload,
  malformed: 'dispute record without dispute or balance_transactions',
  money: (p) => [
    { field: 'dispute.amount_in_cents', amount: p.dispute.amount_in_cents, currency: p.dispute.currency },
    ...p.balance_transactions.flatMap((t, i) => syncedLedgerMoney(`balance_transactions.${i}`, t)),
  ],
  check: (ctx, record, origin) => checkStoreDispute(ctx, record, origin),
  apply: (ctx, record) => applyStoreDispute(ctx, record.account_id, record.live_mode, record.payload),
  movesMoney: true,
  totals: (p) => {
    const d = p.dispute as { currency?: unknown; amount_in_cents?: unknown } | undefined;
    return p.change === 'created' && typeof d?.currency === 'string' && typeof d.amount_in_cents === 'number'
      ? { currency: d.currency, amount_in_cents: d.amount_in_cents }
      : null;
  },
};
