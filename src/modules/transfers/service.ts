import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { isoTime } from '../../clock.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import { postBalanceTransaction, type BalanceTransaction } from '../ledger/service.js';
import { transfersStore, type TransferRow } from './store.js';
import { syncPayload, transferEventPayload, transferView } from './views.js';
import type { CreateTransferInput, TransferView } from './schema.js';

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

/**
 * A peer-to-peer transfer to another account of this installation, in the same environment: the
 * sender's debit and the recipient's credit (ledger `transfer` rows), the transfer, `transfer.sent`
 * to the sender, `transfer.received` to the recipient and the sync record commit together.
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
  return tx(ctx.db, () => {
    const at = isoTime(ctx.clock.now());
    const common = { liveMode: sender.live_mode, type: 'transfer' as const, feeInCents: 0, currency: input.currency, sourceId: id, sourceType: 'transfer' };
    const debit = debitOrRefuse(ctx, {
      ...common,
      accountId: sender.id,
      amountInCents: -input.amount_in_cents,
      description: note ?? `Transfer to ${recipient.name}`,
    });
    const credit = postBalanceTransaction(ctx, {
      ...common,
      accountId: recipient.id,
      amountInCents: input.amount_in_cents,
      description: note ?? `Transfer from ${sender.name}`,
    });
    const row: TransferRow = {
      id,
      account_id: sender.id,
      live_mode: sender.live_mode ? 1 : 0,
      kind: 'peer',
      status: 'succeeded',
      amount_in_cents: input.amount_in_cents,
      currency: input.currency,
      recipient_account_id: recipient.id,
      bank_account_id: null,
      note,
      balance_transaction_id: debit.id,
      recipient_balance_transaction_id: credit.id,
      return_balance_transaction_id: null,
      failure_reason: null,
      created_at: at,
      updated_at: at,
      in_transit_at: null,
      paid_at: null,
      failed_at: null,
    };
    store.insert(row);
    ctx.outbox.emit({
      type: 'transfer.sent',
      accountId: sender.id,
      liveMode: sender.live_mode,
      objectId: id,
      payload: transferEventPayload(row, 'transfer.sent', sender.id),
    });
    ctx.outbox.emit({
      type: 'transfer.received',
      accountId: recipient.id,
      liveMode: recipient.live_mode,
      objectId: id,
      payload: transferEventPayload(row, 'transfer.received', recipient.id),
    });
    appendSyncRecord(ctx.db, {
      kind: 'transfer',
      accountId: sender.id,
      liveMode: sender.live_mode,
      payload: syncPayload(row, 'created', [debit, credit]),
      createdAt: at,
    });
    return transferView(ctx, row, [sender.id]);
  });
}

/** A transfer (peer, sent or received, or a withdrawal) the scope may read, or 404. */
export function getTransfer(ctx: AppContext, scope: ReadScope, id: string): TransferView {
  const row = transfersStore(ctx.db).get(id, scope.liveMode);
  const visible = row && (scope.accountIds.includes(row.account_id) || (row.recipient_account_id !== null && scope.accountIds.includes(row.recipient_account_id)));
  if (!row || !visible) throw notFound('transfer', id);
  return transferView(ctx, row, scope.accountIds);
}

export function listTransfers(
  ctx: AppContext,
  scope: ReadScope,
  filter: { kind?: 'peer' | 'withdrawal' },
  limit: number,
  offset: number,
): { rows: TransferView[]; total: number } {
  const { rows, total } = transfersStore(ctx.db).list({ ...scope, kind: filter.kind, includeIncoming: true }, limit, offset);
  return { rows: rows.map((r) => transferView(ctx, r, scope.accountIds)), total };
}
