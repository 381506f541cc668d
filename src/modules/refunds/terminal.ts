import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { ApiError } from '../../errors.js';
import { initialState, nextState } from '../../lifecycle.js';
import type { Account } from '../../accounts/service.js';
import { accountsOf } from '../../accounts/service.js';
import { paymentIntentRow, type PaymentIntentRow } from '../payments/service.js';
import { terminalPaymentOfCheckout } from '../terminals/commands/service.js';
import { signalTerminalRefund } from '../terminals/service.js';
import { newRefundRow, refundMoneyBack, refundView, type RefundAnswer } from './money-back.js';
import { refundsStore, type RefundRow, type TerminalRefundRow } from './store.js';
import { terminalRefundMachine, type TerminalRefundEvent } from './terminal-machine.js';

/**
 * Refunds of payments a nexo terminal took, carried out by that terminal (docs/terminals-nexo.md
 * "Refunds"): the refund is `pending` until the terminal answers, then `succeeded` (the ledger row,
 * `refund.create`, the sync record, as any refund) or `failed` (nothing moved; a new POST of the
 * same payment asks the terminal again). The link side is src/modules/terminals/link/nexo-refunds.ts.
 */

/** The nexo terminal that took this payment, if one did: the refund is then the terminal's to make. */
export function nexoPaymentOf(ctx: AppContext, pa: PaymentIntentRow) {
  if (pa.method !== 'terminal') return undefined;
  const t = terminalPaymentOfCheckout(ctx, pa.checkout_id);
  return t?.transport === 'nexo' ? t : undefined;
}

/**
 * A pending refund of `pa` for its nexo terminal: a reversal naming the payment's POITransactionID
 * when posd holds it (both its parts), else an unreferenced refund (the card presented again).
 * In the caller's transaction.
 */
export function queueTerminalRefund(
  ctx: AppContext,
  account: Account,
  pa: PaymentIntentRow,
  terminal: NonNullable<ReturnType<typeof nexoPaymentOf>>,
  reason: string | null,
): RefundAnswer {
  if (terminal.retired) throw new ApiError('terminal_refund_unavailable');
  const row = newRefundRow(ctx, account, pa, 'pending', reason);
  const store = refundsStore(ctx.db);
  store.insert(row);
  const referenced = terminal.reference !== null && terminal.referenceAt !== null;
  store.insertTerminal({
    refund_id: row.id,
    terminal_id: terminal.terminalId,
    kind: referenced ? 'reversal' : 'refund_payment',
    poi_transaction_id: referenced ? terminal.reference : null,
    poi_transaction_at: referenced ? terminal.referenceAt : null,
    status: initialState(terminalRefundMachine),
    attempt: 1,
    failure_reason: null,
    terminal_reference: null,
    updated_at: row.created_at,
  });
  signalTerminalRefund(ctx, terminal.terminalId);
  return refundView(ctx, row, pa.customer_id);
}

/** A failed terminal refund asked for again: a new request (attempt) of the same refund. In the caller's transaction. */
export function retryTerminalRefund(ctx: AppContext, refund: RefundRow, pa: PaymentIntentRow): RefundAnswer | undefined {
  const store = refundsStore(ctx.db);
  const t = store.terminalOf(refund.id);
  if (!t || t.status !== 'failed') return undefined;
  if (nexoPaymentOf(ctx, pa)?.retired !== false) throw new ApiError('terminal_refund_unavailable');
  move(ctx, t, { type: 'RETRY' }, { attempt: t.attempt + 1, failure_reason: null });
  store.settle({ id: refund.id, status: 'pending', fee_returned_in_cents: 0, balance_transaction_id: null });
  signalTerminalRefund(ctx, t.terminal_id);
  return refundView(ctx, { ...refund, status: 'pending' }, pa.customer_id);
}

export function terminalRefundFailure(ctx: AppContext, refundId: string): string | null {
  return refundsStore(ctx.db).terminalOf(refundId)?.failure_reason ?? null;
}

export interface OpenTerminalRefund {
  refundId: string;
  attempt: number;
  kind: 'reversal' | 'refund_payment';
  original: { TransactionID: string; TimeStamp: string } | null;
  amountInCents: number;
  currency: string;
  /** The terminal may hold this attempt's request: its status is asked before anything else. */
  sent: boolean;
}

/** A terminal's refunds not yet answered, oldest first. */
export function openTerminalRefunds(ctx: AppContext, terminalId: string): OpenTerminalRefund[] {
  const store = refundsStore(ctx.db);
  return store.openOfTerminal(terminalId).map((t) => {
    const r = store.byId(t.refund_id)!;
    return {
      refundId: t.refund_id,
      attempt: t.attempt,
      kind: t.kind,
      original: t.poi_transaction_id && t.poi_transaction_at ? { TransactionID: t.poi_transaction_id, TimeStamp: t.poi_transaction_at } : null,
      amountInCents: r.amount_in_cents,
      currency: r.currency,
      sent: t.status === 'sent',
    };
  });
}

/**
 * Whether a refund request may be on the terminal now (`sent`: its answer, or its status, not yet
 * in): the terminal runs one transaction at a time, so its charges wait (terminals/link/offer.ts).
 */
export function terminalRefundInFlight(ctx: AppContext, terminalId: string): boolean {
  return refundsStore(ctx.db).hasSentOfTerminal(terminalId);
}

function move(ctx: AppContext, t: TerminalRefundRow, event: TerminalRefundEvent, patch: Partial<TerminalRefundRow> = {}): TerminalRefundRow | undefined {
  const to = nextState(terminalRefundMachine, t.status, event);
  if (!to) return undefined;
  const next = { ...t, ...patch, status: to, updated_at: isoTime(ctx.clock.now()) };
  refundsStore(ctx.db).updateTerminal(next);
  return next;
}

export type TerminalRefundNews =
  /** Committed before the request goes out: after a crash, its status is asked, never a resend. */
  | { type: 'SEND'; attempt: number }
  | { type: 'SUCCEED'; attempt: number; reference: string | null }
  | { type: 'FAIL'; attempt: number; reason: string }
  /** Busy: the terminal took nothing; the next request is a new attempt. */
  | { type: 'BUSY'; attempt: number }
  /** The terminal's status says it never held the request: the same request may go again. */
  | { type: 'NOT_HELD'; attempt: number };

/**
 * What the terminal said of a refund's request `attempt`, applied in one transaction. News about
 * another attempt than the current one, or that the machine refuses, changes nothing. Returns
 * whether it changed the refund.
 */
export function applyTerminalRefund(ctx: AppContext, refundId: string, news: TerminalRefundNews): boolean {
  return tx(ctx.db, () => {
    const store = refundsStore(ctx.db);
    const t = store.terminalOf(refundId);
    if (!t || t.attempt !== news.attempt) return false;
    const refund = store.byId(refundId)!;
    switch (news.type) {
      case 'SEND':
        return move(ctx, t, { type: 'SEND' }) !== undefined;
      case 'NOT_HELD':
        return move(ctx, t, { type: 'NOT_HELD' }) !== undefined;
      case 'BUSY':
        return move(ctx, t, { type: 'NOT_HELD' }, { attempt: t.attempt + 1 }) !== undefined;
      case 'FAIL':
        if (!move(ctx, t, { type: 'FAIL' }, { failure_reason: news.reason })) return false;
        store.settle({ id: refundId, status: 'failed', fee_returned_in_cents: 0, balance_transaction_id: null });
        return true;
      case 'SUCCEED': {
        if (!move(ctx, t, { type: 'SUCCEED' }, { terminal_reference: news.reference })) return false;
        const account = accountsOf(ctx).account(refund.account_id)!;
        const pa = paymentIntentRow(ctx, [refund.account_id], refund.live_mode === 1, refund.payment_intent_id)!;
        refundMoneyBack(ctx, { accountId: account.id, liveMode: refund.live_mode === 1, accountName: account.name }, pa, refund, false);
        return true;
      }
    }
  });
}
