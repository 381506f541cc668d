import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { isoTime } from '../../clock.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import { postBalanceTransaction, type BalanceTransaction } from '../ledger/service.js';
import { transfersStore, type TransferRow } from './store.js';
import { accountNames, syncPayload, transferEventPayload, transferView } from './views.js';
import type { CreateTransferInput, TransferView } from './schema.js';
import { initialState, nextState } from '../../lifecycle.js';
import { peerTransferMachine, reviewStep, type PeerTransferStatus } from './machine.js';

export interface ReadScope {
  accountIds: string[];
  liveMode: boolean;
}

/**
 * Debits `amount` from an account's balance by posting `input`'s row, or throws 422
 * `insufficient_funds`. Runs inside the caller's IMMEDIATE transaction: the row is appended after the
 * last one under the write lock, so checking the balance it leaves is race-free, and throwing rolls
 * the row back with everything else.
 */
export function debitOrRefuse(ctx: AppContext, input: Parameters<typeof postBalanceTransaction>[1]): BalanceTransaction {
  const row = postBalanceTransaction(ctx, input);
  if (row.balance_after_in_cents < 0) {
    const available = row.balance_after_in_cents - row.net_amount_in_cents;
    throw new ApiError('insufficient_funds', {
      errors: { amount_in_cents: [`exceeds the available balance of ${Math.max(0, available)} cents ${input.currency}`] },
    });
  }
  return row;
}

type PeerEventType = 'transfer.sent' | 'transfer.received' | 'transfer.pending' | 'transfer.in_review' | 'transfer.cancelled';

/** A `transfer.*` event to one side: the recipient's `transfer.received`, the sender's others. */
function emitPeer(ctx: AppContext, row: TransferRow, type: PeerEventType, names = accountNames(ctx)): void {
  const viewer = type === 'transfer.received' ? row.recipient_account_id! : row.account_id;
  ctx.outbox.emit({
    type,
    accountId: viewer,
    liveMode: row.live_mode === 1,
    objectId: row.id,
    payload: transferEventPayload(row, type, viewer, names),
  });
}

function syncPeer(ctx: AppContext, row: TransferRow, change: string, ledger: BalanceTransaction[], at: string): void {
  appendSyncRecord(ctx.db, {
    kind: 'transfer',
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    payload: syncPayload(row, change, ledger),
    createdAt: at,
  });
}

/** Whether a transfer of this amount goes to human review (`money.transfer_review_above_in_cents`, 0: never). */
export function heldForReview(ctx: AppContext, amountInCents: number): boolean {
  const above = ctx.config.money.transfer_review_above_in_cents;
  return above > 0 && amountInCents > above;
}

/**
 * A peer-to-peer transfer to another account of this installation, in the same environment, through
 * the machine's automatic evaluation (`pending`). At or under `money.transfer_review_above_in_cents`
 * (or with it 0) it is approved at once: the sender's debit and the recipient's credit (ledger
 * `transfer` rows), `transfer.sent` to the sender, `transfer.received` to the recipient. Above it, it
 * is held for review: the sender's debit only (the money reserved: out of the available balance, not
 * yet the recipient's), `transfer.pending` then `transfer.in_review` to the sender; `reviewTransfer`
 * finishes it. Either way the row, its ledger rows, its events and the sync record commit together.
 */
export function createTransfer(ctx: AppContext, sender: Account, input: CreateTransferInput): TransferView {
  const accounts = accountsOf(ctx);
  const recipient = accounts.account(input.recipient_id);
  if (input.recipient_id === sender.id) throw invalid({ recipient_id: 'must be another account than the sender' });
  if (!recipient || recipient.live_mode !== sender.live_mode) {
    throw invalid({ recipient_id: `no account with this id in the ${sender.live_mode ? 'live' : 'sandbox'} environment` });
  }
  if (!sender.currencies.includes(input.currency)) throw invalid({ currency: `must be one of: ${sender.currencies.join(', ')}` });
  if (!recipient.currencies.includes(input.currency)) throw invalid({ currency: `the recipient does not hold ${input.currency}` });

  const store = transfersStore(ctx.db);
  const id = newId('tr');
  const note = input.note?.trim() || null;
  const held = heldForReview(ctx, input.amount_in_cents);
  const names = accountNames(ctx, [sender, recipient]);
  return tx(ctx.db, () => {
    const at = isoTime(ctx.clock.now());
    const debit = debitOrRefuse(ctx, {
      liveMode: sender.live_mode,
      type: 'transfer',
      feeInCents: 0,
      currency: input.currency,
      sourceId: id,
      sourceType: 'transfer',
      accountId: sender.id,
      amountInCents: -input.amount_in_cents,
      description: note ?? `Transfer to ${recipient.name}`,
    });
    const evaluating: TransferRow = {
      id,
      account_id: sender.id,
      live_mode: sender.live_mode ? 1 : 0,
      kind: 'peer',
      status: initialState(peerTransferMachine),
      amount_in_cents: input.amount_in_cents,
      currency: input.currency,
      recipient_account_id: recipient.id,
      bank_account_id: null,
      note,
      balance_transaction_id: debit.id,
      recipient_balance_transaction_id: null,
      return_balance_transaction_id: null,
      failure_reason: null,
      created_at: at,
      updated_at: at,
      in_transit_at: null,
      paid_at: null,
      failed_at: null,
    };
    if (held) {
      // The evaluation sends it to a reviewer: `transfer.pending` (evaluated), then `transfer.in_review`.
      emitPeer(ctx, evaluating, 'transfer.pending', names);
      const row: TransferRow = { ...evaluating, status: nextState(peerTransferMachine, 'pending', { type: 'review' })! };
      store.insert(row);
      emitPeer(ctx, row, 'transfer.in_review', names);
      syncPeer(ctx, row, 'created', [debit], at);
      return transferView(ctx, row, [sender.id], names);
    }
    const credit = creditRecipient(ctx, evaluating, sender.name);
    const row: TransferRow = {
      ...evaluating,
      status: nextState(peerTransferMachine, 'pending', { type: 'approve' })!,
      recipient_balance_transaction_id: credit.id,
    };
    store.insert(row);
    emitPeer(ctx, row, 'transfer.sent', names);
    emitPeer(ctx, row, 'transfer.received', names);
    syncPeer(ctx, row, 'created', [debit, credit], at);
    return transferView(ctx, row, [sender.id], names);
  });
}

function creditRecipient(ctx: AppContext, row: TransferRow, senderName: string): BalanceTransaction {
  return postBalanceTransaction(ctx, {
    liveMode: row.live_mode === 1,
    type: 'transfer',
    feeInCents: 0,
    currency: row.currency,
    sourceId: row.id,
    sourceType: 'transfer',
    accountId: row.recipient_account_id!,
    amountInCents: row.amount_in_cents,
    description: row.note ?? `Transfer from ${senderName}`,
  });
}

export const DEFAULT_REVIEW_CANCEL_REASON = 'rejected_in_review';

/**
 * The reviewer's decision on a transfer held for review (sandbox: `POST /test_helpers/transfers/{id}/review`;
 * the box's operator: `posd transfers review`). `succeeded` releases it: the recipient's credit row,
 * `transfer.sent` and `transfer.received`, as an unheld transfer. `cancelled` returns the
 * reservation to the sender (a positive `transfer` row, `return_balance_transaction_id`) and emits
 * `transfer.cancelled` with `failure_reason`. One move of the machine; 422 `transfer_not_in_review`
 * for a transfer that is not held. `scope` is the sender's (the reviewer acts for the sending account).
 */
export function reviewTransfer(ctx: AppContext, scope: ReadScope, id: string, outcome: 'succeeded' | 'cancelled', reason?: string): TransferView {
  const store = transfersStore(ctx.db);
  return tx(ctx.db, () => {
    const row = store.get(id, scope.liveMode);
    if (row?.kind !== 'peer' || !scope.accountIds.includes(row.account_id)) throw notFound('transfer', id);
    const event = reviewStep(row.status as PeerTransferStatus, outcome);
    if (!event) throw new ApiError('transfer_not_in_review', { message: `The transfer is ${row.status}, not in review.` });
    const next = nextState(peerTransferMachine, row.status as PeerTransferStatus, event)!;
    const at = isoTime(ctx.clock.now());
    let ledger: BalanceTransaction;
    if (next === 'succeeded') {
      ledger = creditRecipient(ctx, row, accountsOf(ctx).account(row.account_id)?.name ?? row.account_id);
    } else {
      ledger = postBalanceTransaction(ctx, {
        accountId: row.account_id,
        liveMode: row.live_mode === 1,
        type: 'transfer',
        amountInCents: row.amount_in_cents,
        feeInCents: 0,
        currency: row.currency,
        sourceId: row.id,
        sourceType: 'transfer',
        description: `Transfer ${row.id} cancelled in review: money returned`,
      });
    }
    const changed = store.setStatus({
      id,
      from: row.status,
      status: next,
      at,
      failure_reason: next === 'cancelled' ? (reason ?? DEFAULT_REVIEW_CANCEL_REASON) : null,
      return_balance_transaction_id: next === 'cancelled' ? ledger.id : null,
      recipient_balance_transaction_id: next === 'succeeded' ? ledger.id : null,
    });
    if (!changed) throw new Error(`transfer ${id} changed under the write lock`);
    const after = store.get(id, scope.liveMode)!;
    if (next === 'succeeded') {
      emitPeer(ctx, after, 'transfer.sent');
      emitPeer(ctx, after, 'transfer.received');
    } else {
      emitPeer(ctx, after, 'transfer.cancelled');
    }
    syncPeer(ctx, after, `status:${next}`, [ledger], at);
    return transferView(ctx, after, [after.account_id]);
  });
}

/** A transfer (peer, sent or received, or a withdrawal) the scope may read, or 404. */
export function getTransfer(ctx: AppContext, scope: ReadScope, id: string): TransferView {
  const row = transfersStore(ctx.db).get(id, scope.liveMode);
  // A held or cancelled transfer never reached its recipient: only the sender reads it.
  const visible =
    row &&
    (scope.accountIds.includes(row.account_id) ||
      (row.status === 'succeeded' && row.recipient_account_id !== null && scope.accountIds.includes(row.recipient_account_id)));
  if (!row || !visible) throw notFound('transfer', id);
  return transferView(ctx, row, scope.accountIds);
}

export function listTransfers(
  ctx: AppContext,
  scope: ReadScope,
  filter: { kind?: 'peer' | 'withdrawal'; status?: TransferView['status'] },
  limit: number,
  offset: number,
): { rows: TransferView[]; total: number } {
  const { rows, total } = transfersStore(ctx.db).list({ ...scope, kind: filter.kind, status: filter.status, includeIncoming: true }, limit, offset);
  const names = accountNames(ctx);
  return { rows: rows.map((r) => transferView(ctx, r, scope.accountIds, names)), total };
}
