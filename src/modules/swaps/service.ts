import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { initialState, nextState } from '../../lifecycle.js';
import type { Account } from '../../accounts/service.js';
import { postBalanceTransaction } from '../ledger/service.js';
import { swapMachine, type SwapEvent } from './machine.js';
import { swapsStore, type SwapRow } from './store.js';
import { swapEventPayload, swapView } from './views.js';
import type { CreateSwapInput, SwapView } from './schema.js';

/**
 * Swaps between a dollar balance and USDC (docs/events.md "Swaps and USDC balances"). USDC is a
 * dollar stablecoin: USD and USDC convert at par, so a swap needs no quote. A GTQ balance is not
 * swapped (the box has no exchange rate to quote; refused with 400 naming the currency).
 */

/** The network posd's USDC lives on. */
export const SWAP_NETWORK = 'ethereum';

export interface ReadScope {
  accountIds: string[];
  liveMode: boolean;
}

/**
 * A swap: the source balance is debited at once (ledger `swap` row; 422 `insufficient_funds` and
 * nothing written when short), the swap waits `pending` for the exchange, `swap.create` is emitted.
 * Sandbox only for now: a live key gets 422 `exchange_not_configured`.
 */
export function createSwap(ctx: AppContext, account: Account, input: CreateSwapInput): SwapView {
  if (input.from_currency === input.to_currency) throw invalid({ to_currency: 'must differ from from_currency' });
  // Only an exchange's notice completes a swap (`settleSwap`), and no exchange provider is wired to
  // posd: a live swap would debit the balance and stay pending forever. Refused before anything is
  // written; the sandbox helper plays the exchange.
  if (account.live_mode) throw new ApiError('exchange_not_configured');
  return tx(ctx.db, () => {
    const at = isoTime(ctx.clock.now());
    const id = newId('sw');
    const debit = postBalanceTransaction(ctx, {
      accountId: account.id,
      liveMode: account.live_mode,
      type: 'swap',
      amountInCents: -input.amount_in_cents,
      feeInCents: 0,
      currency: input.from_currency,
      sourceId: id,
      sourceType: 'swap',
      description: `Swap ${input.from_currency} → ${input.to_currency}`,
    });
    if (debit.balance_after_in_cents < 0) {
      const available = debit.balance_after_in_cents - debit.net_amount_in_cents;
      throw new ApiError('insufficient_funds', {
        errors: { amount_in_cents: [`exceeds the available balance of ${Math.max(0, available)} cents ${input.from_currency}`] },
      });
    }
    const row: SwapRow = {
      id,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      status: initialState(swapMachine),
      from_currency: input.from_currency,
      to_currency: input.to_currency,
      amount_in_cents: input.amount_in_cents,
      // At par: one cent of USD is one cent of USDC.
      to_amount_in_cents: input.amount_in_cents,
      network: SWAP_NETWORK,
      transaction_hash: null,
      failure_reason: null,
      balance_transaction_id: debit.id,
      to_balance_transaction_id: null,
      return_balance_transaction_id: null,
      created_at: at,
      updated_at: at,
    };
    swapsStore(ctx.db).insert(row);
    ctx.outbox.emit({
      accountId: account.id,
      liveMode: account.live_mode,
      type: 'swap.create',
      payload: swapEventPayload(row, 'swap.create', null),
      objectId: id,
    });
    return swapView(row);
  });
}

export interface SwapOutcome {
  outcome: 'completed' | 'failed';
  transactionHash?: string | null;
  failureReason?: string | null;
}

/**
 * The exchange's answer about a pending swap: the code its notice goes through (and the sandbox
 * helper). Completed credits the target currency (ledger `swap` row), failed returns the source
 * amount (ledger `swap` row); either emits `swap.update`. A swap already settled answers as it is
 * when told the same outcome, and 422 `swap_final` when told another.
 */
export function settleSwap(ctx: AppContext, account: Account, id: string, o: SwapOutcome): SwapView {
  return tx(ctx.db, () => {
    const store = swapsStore(ctx.db);
    const row = store.byId(id);
    if (!row || row.account_id !== account.id || (row.live_mode === 1) !== account.live_mode) throw notFound('swap', id);
    const event: SwapEvent = o.outcome === 'completed' ? { type: 'COMPLETE' } : { type: 'FAIL' };
    const to = nextState(swapMachine, row.status, event);
    if (!to) {
      if (row.status === o.outcome) return swapView(row);
      throw new ApiError('swap_final', { message: `The swap is already ${row.status}.` });
    }
    const at = isoTime(ctx.clock.now());
    const common = { accountId: account.id, liveMode: account.live_mode, type: 'swap' as const, feeInCents: 0, sourceId: row.id, sourceType: 'swap' };
    const completed = to === 'completed';
    const moved = completed
      ? postBalanceTransaction(ctx, {
          ...common,
          amountInCents: row.to_amount_in_cents,
          currency: row.to_currency,
          description: `Swap ${row.from_currency} → ${row.to_currency}`,
        })
      : postBalanceTransaction(ctx, {
          ...common,
          amountInCents: row.amount_in_cents,
          currency: row.from_currency,
          description: `Swap ${row.from_currency} → ${row.to_currency} failed: returned`,
        });
    const next: SwapRow = {
      ...row,
      status: to,
      transaction_hash: completed ? (o.transactionHash ?? `0x${randomBytes(32).toString('hex')}`) : null,
      failure_reason: completed ? null : (o.failureReason ?? 'exchange_refused'),
      to_balance_transaction_id: completed ? moved.id : null,
      return_balance_transaction_id: completed ? null : moved.id,
      updated_at: at,
    };
    if (!store.settle(next)) throw new ApiError('swap_final', { message: 'The swap changed meanwhile; read it again.' });
    ctx.outbox.emit({
      accountId: account.id,
      liveMode: account.live_mode,
      type: 'swap.update',
      payload: swapEventPayload(next, 'swap.update', row.status),
      objectId: row.id,
    });
    return swapView(next);
  });
}

export function getSwap(ctx: AppContext, scope: ReadScope, id: string): SwapView {
  const row = swapsStore(ctx.db).byId(id);
  if (!row || !scope.accountIds.includes(row.account_id) || (row.live_mode === 1) !== scope.liveMode) throw notFound('swap', id);
  return swapView(row);
}

export function listSwaps(ctx: AppContext, scope: ReadScope, limit: number, offset: number): { rows: SwapView[]; total: number } {
  const { rows, total } = swapsStore(ctx.db).list(scope.accountIds, scope.liveMode, limit, offset);
  return { rows: rows.map(swapView), total };
}
