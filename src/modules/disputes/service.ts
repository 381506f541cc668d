import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { initialState, isFinalState, nextState } from '../../lifecycle.js';
import { postBalanceTransaction, type BalanceTransaction } from '../ledger/service.js';
import { paymentIntentRow } from '../payments/service.js';
import { disputeMachine, disputeStep, type DisputeOutcome, type DisputeStatus } from './machine.js';
import { disputesStore, type DisputeRow } from './store.js';
import { publishDispute } from './sync.js';
import { disputeEventPayload, disputeSyncPayload, disputeView } from './views.js';
import type { DisputeView, OpenDisputeInput } from './schema.js';

export type { DisputeView } from './schema.js';

export interface DisputeScope {
  accountIds: string[];
  liveMode: boolean;
}

/** The methods a card network can dispute: online card payments and card-present (terminal) ones. */
const CARD_METHODS = new Set(['card', 'terminal']);

function emit(ctx: AppContext, row: DisputeRow, type: 'dispute.create' | 'dispute.update', previous: DisputeStatus | null): void {
  ctx.outbox.emit({ type, accountId: row.account_id, liveMode: row.live_mode === 1, objectId: row.id, payload: disputeEventPayload(row, type, previous) });
}

function sync(ctx: AppContext, row: DisputeRow, change: string, ledger: BalanceTransaction[], at: string): void {
  appendSyncRecord(ctx.db, {
    kind: 'dispute',
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    payload: disputeSyncPayload(row, change, ledger),
    createdAt: at,
  });
}

/**
 * The dispute of a payment, open or closed (a payment is disputed once). Refunds read it: a
 * disputed payment is not refunded as well (the chargeback already took the money back).
 */
export function disputeOfPayment(ctx: AppContext, paymentIntentId: string): DisputeView | undefined {
  const row = disputesStore(ctx.db).byPaymentIntent(paymentIntentId);
  return row ? disputeView(row) : undefined;
}

/**
 * A card network's notice that the cardholder disputes a succeeded card payment (sandbox: `POST
 * /test_helpers/payment_intents/{id}/dispute`; a processor's notification calls the same). The
 * disputed amount (the whole payment unless the notice says less) is held back at once with a
 * negative ledger `dispute` row; the balance may go below zero, as with a refund: the money already
 * left. The dispute, its row, `dispute.create` and the sync record commit together. A payment
 * refunded earlier may still be disputed (the network does not know); the merchant then answers
 * with the refund as evidence and wins the money back. 422 `payment_not_disputable` for anything but
 * a succeeded card payment, 422 `already_disputed` for a second dispute.
 */
export function openDispute(ctx: AppContext, scope: DisputeScope, paymentIntentId: string, input: OpenDisputeInput): DisputeView {
  return tx(ctx.db, () => {
    const pa = paymentIntentRow(ctx, scope.accountIds, scope.liveMode, paymentIntentId);
    if (!pa) throw notFound('payment intent', paymentIntentId);
    if (!CARD_METHODS.has(pa.method) || pa.status !== 'succeeded') {
      throw new ApiError('payment_not_disputable', {
        message:
          pa.status !== 'succeeded'
            ? `The payment intent is ${pa.status}; only a succeeded card payment can be disputed.`
            : `A ${pa.method} payment cannot be disputed by a card network.`,
      });
    }
    const store = disputesStore(ctx.db);
    const existing = store.byPaymentIntent(pa.id);
    if (existing) throw new ApiError('already_disputed', { message: `The payment intent is already disputed by ${existing.id}.` });
    const amount = input.amount_in_cents ?? pa.amount_in_cents;
    if (amount > pa.amount_in_cents) throw invalid({ amount_in_cents: `must not exceed the payment's ${pa.amount_in_cents} cents` });

    const id = newId('dp');
    const at = isoTime(ctx.clock.now());
    const hold = postBalanceTransaction(ctx, {
      accountId: pa.account_id,
      liveMode: pa.live_mode === 1,
      type: 'dispute',
      amountInCents: -amount,
      feeInCents: 0,
      currency: pa.currency,
      sourceId: id,
      sourceType: 'dispute',
      description: `Dispute of ${pa.id}: amount held back`,
    });
    const row: DisputeRow = {
      id,
      account_id: pa.account_id,
      live_mode: pa.live_mode,
      payment_intent_id: pa.id,
      intent_id: pa.intent_id,
      status: initialState(disputeMachine),
      reason: input.reason ?? 'general',
      amount_in_cents: amount,
      currency: pa.currency,
      balance_transaction_id: hold.id,
      reversal_balance_transaction_id: null,
      created_at: at,
      updated_at: at,
      closed_at: null,
    };
    store.insert(row);
    publishDispute(ctx, row);
    emit(ctx, row, 'dispute.create', null);
    sync(ctx, row, 'created', [hold], at);
    return disputeView(row);
  });
}

/**
 * The network's next word on a dispute (sandbox: `POST /test_helpers/disputes/{id}/advance`): the
 * merchant's evidence is under review, or the dispute is won (a positive ledger `dispute` row gives
 * the held amount back) or lost (the money stays debited; no row). One move of the machine, one
 * `dispute.update` with the status it left. 422 `dispute_final` once won or lost.
 */
export function advanceDispute(ctx: AppContext, scope: DisputeScope, id: string, outcome: DisputeOutcome): DisputeView {
  return tx(ctx.db, () => {
    const store = disputesStore(ctx.db);
    const row = store.byId(id);
    if (!row || !scope.accountIds.includes(row.account_id) || (row.live_mode === 1) !== scope.liveMode) throw notFound('dispute', id);
    if (isFinalState(disputeMachine, row.status)) throw new ApiError('dispute_final', { message: `The dispute is already ${row.status}.` });
    const event = disputeStep(row.status, outcome);
    if (!event) throw invalid({ outcome: [`cannot be reached from ${row.status}`] }, `A dispute ${row.status} cannot move to ${outcome}.`);
    const next = nextState(disputeMachine, row.status, event)!;
    const at = isoTime(ctx.clock.now());
    const ledger: BalanceTransaction[] = [];
    if (next === 'won') {
      ledger.push(
        postBalanceTransaction(ctx, {
          accountId: row.account_id,
          liveMode: row.live_mode === 1,
          type: 'dispute',
          amountInCents: row.amount_in_cents,
          feeInCents: 0,
          currency: row.currency,
          sourceId: row.id,
          sourceType: 'dispute',
          description: `Dispute ${row.id} won: amount returned`,
        }),
      );
    }
    const changed = store.setStatus({ id, from: row.status, status: next, at, reversal_balance_transaction_id: ledger[0]?.id ?? null });
    if (!changed) throw new Error(`dispute ${id} changed under the write lock`);
    const after = store.byId(id)!;
    publishDispute(ctx, after);
    emit(ctx, after, 'dispute.update', row.status);
    sync(ctx, after, `status:${next}`, ledger, at);
    return disputeView(after);
  });
}
