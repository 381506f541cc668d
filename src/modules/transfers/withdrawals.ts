import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { isoTime } from '../../clock.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import type { Account } from '../../accounts/service.js';
import { bankAccountById } from '../bank-accounts/service.js';
import { postBalanceTransaction, type BalanceTransaction } from '../ledger/service.js';
import { initialState, isFinalState, nextState } from '../../lifecycle.js';
import { pathTo, withdrawalMachine, type WithdrawalStatus } from './machine.js';
import { debitOrRefuse, type ReadScope } from './service.js';
import { transfersStore, type TransferRow } from './store.js';
import { accountNames, bankAccountOf, syncPayload, withdrawalEventPayload, withdrawalView } from './views.js';
import type { CreateWithdrawalInput, WithdrawalView } from './schema.js';

function emitWithdrawal(ctx: AppContext, row: TransferRow, type: 'withdrawal.create' | 'withdrawal.update', previous: string | null): void {
  ctx.outbox.emit({
    type,
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    objectId: row.id,
    payload: withdrawalEventPayload(row, bankAccountOf(ctx, row), type, previous, accountNames(ctx)),
  });
}

function syncWithdrawal(ctx: AppContext, row: TransferRow, change: string, ledger: BalanceTransaction[], at: string): void {
  appendSyncRecord(ctx.db, {
    kind: 'withdrawal',
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    payload: syncPayload(row, change, ledger),
    createdAt: at,
  });
}

/**
 * A withdrawal to one of the account's active bank accounts in the same currency. The money leaves
 * the balance at once (a negative `payout` row), so the balance never offers money already on its way
 * to the bank; a failed withdrawal gives it back.
 */
export function createWithdrawal(ctx: AppContext, account: Account, input: CreateWithdrawalInput): WithdrawalView {
  const bank = bankAccountById(ctx, input.bank_account_id, account.live_mode);
  if (!bank || bank.account_id !== account.id) throw invalid({ bank_account_id: 'no bank account with this id' });
  if (bank.status !== 'active') throw new ApiError('bank_account_archived');
  if (bank.currency !== input.currency) throw invalid({ currency: `must be the bank account's currency (${bank.currency})` });
  if (!account.currencies.includes(input.currency)) throw invalid({ currency: `must be one of: ${account.currencies.join(', ')}` });

  const store = transfersStore(ctx.db);
  const id = newId('wd');
  return tx(ctx.db, () => {
    const at = isoTime(ctx.clock.now());
    const debit = debitOrRefuse(ctx, {
      accountId: account.id,
      liveMode: account.live_mode,
      type: 'payout',
      amountInCents: -input.amount_in_cents,
      feeInCents: 0,
      currency: input.currency,
      sourceId: id,
      sourceType: 'withdrawal',
      description: `Withdrawal to ${bank.bank_name} ${'*'.repeat(4)}${bank.number.slice(-4)}`,
    });
    const row: TransferRow = {
      id,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      kind: 'withdrawal',
      status: initialState(withdrawalMachine),
      amount_in_cents: input.amount_in_cents,
      currency: input.currency,
      recipient_account_id: null,
      bank_account_id: bank.id,
      note: null,
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
    store.insert(row);
    emitWithdrawal(ctx, row, 'withdrawal.create', null);
    syncWithdrawal(ctx, row, 'created', [debit], at);
    return withdrawalView(ctx, row);
  });
}

function findWithdrawal(ctx: AppContext, scope: ReadScope, id: string): TransferRow {
  const row = transfersStore(ctx.db).get(id, scope.liveMode);
  if (row?.kind !== 'withdrawal' || !scope.accountIds.includes(row.account_id)) throw notFound('withdrawal', id);
  return row;
}

export function getWithdrawal(ctx: AppContext, scope: ReadScope, id: string): WithdrawalView {
  return withdrawalView(ctx, findWithdrawal(ctx, scope, id));
}

export function listWithdrawals(
  ctx: AppContext,
  scope: ReadScope,
  filter: { status?: WithdrawalStatus },
  limit: number,
  offset: number,
): { rows: WithdrawalView[]; total: number } {
  const { rows, total } = transfersStore(ctx.db).list({ ...scope, kind: 'withdrawal', status: filter.status, includeIncoming: false }, limit, offset);
  return { rows: rows.map((r) => withdrawalView(ctx, r)), total };
}

export const DEFAULT_FAILURE_REASON = 'returned_by_bank';

/**
 * Moves a withdrawal toward `outcome` through the machine, one status at a time: each step updates
 * the row, emits `withdrawal.update` and appends a sync record; reaching `failed` posts the positive
 * `payout` row that returns the money. Used by the sandbox test helper; it is also what applies a
 * payout processor's or central's decision. 422 `withdrawal_final` when the outcome cannot be reached.
 */
export function advanceWithdrawal(
  ctx: AppContext,
  scope: ReadScope,
  id: string,
  outcome: 'in_transit' | 'paid' | 'failed',
  failureReason?: string,
): WithdrawalView {
  const store = transfersStore(ctx.db);
  return tx(ctx.db, () => {
    let row = findWithdrawal(ctx, scope, id);
    const status = row.status as WithdrawalStatus;
    const plan = pathTo(status, outcome);
    if (!plan) {
      const final = isFinalState(withdrawalMachine, status);
      throw new ApiError(final ? 'withdrawal_final' : 'validation_error', {
        message: final ? `The withdrawal is already ${status}.` : `A ${status} withdrawal cannot move to ${outcome}.`,
        ...(final ? {} : { errors: { outcome: [`cannot be reached from ${status}`] } }),
      });
    }
    for (const event of plan) {
      const from = row.status as WithdrawalStatus;
      const next = nextState(withdrawalMachine, from, event)!;
      const at = isoTime(ctx.clock.now());
      const ledger: BalanceTransaction[] = [];
      let returned: BalanceTransaction | undefined;
      if (next === 'failed') {
        returned = postBalanceTransaction(ctx, {
          accountId: row.account_id,
          liveMode: row.live_mode === 1,
          type: 'payout',
          amountInCents: row.amount_in_cents,
          feeInCents: 0,
          currency: row.currency,
          sourceId: row.id,
          sourceType: 'withdrawal',
          description: `Withdrawal ${row.id} failed: money returned`,
        });
        ledger.push(returned);
      }
      const changed = store.setStatus({
        id: row.id,
        from,
        status: next,
        at,
        failure_reason: next === 'failed' ? (failureReason ?? DEFAULT_FAILURE_REASON) : null,
        return_balance_transaction_id: returned?.id ?? null,
      });
      if (!changed) throw new Error(`withdrawal ${row.id} changed under the write lock`);
      row = store.get(row.id, row.live_mode === 1)!;
      emitWithdrawal(ctx, row, 'withdrawal.update', from);
      syncWithdrawal(ctx, row, `status:${next}`, ledger, at);
    }
    return withdrawalView(ctx, row);
  });
}
