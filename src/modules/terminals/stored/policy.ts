import type { AppContext } from '../../../context.js';
import { isoTime } from '../../../clock.js';
import { storedPaymentsStore } from './store.js';

/** The four caps of stored payments, per account and environment (docs/stored-payments.md). */
export interface OfflineCaps {
  allowed: boolean;
  max_payment_in_cents: number;
  max_total_in_cents: number;
  max_count: number;
  max_age_hours: number;
}

/** Why a stored payment is over its caps, or why posd refuses a charge it could not store. */
export type CapName = 'not_allowed' | 'currency' | 'max_payment' | 'max_total' | 'max_count' | 'max_age';

/** What the terminal may store now: the body of protocol 2's `offline_policy`. */
export interface PolicyView {
  allowed: boolean;
  currency: string;
  max_payment_in_cents: number;
  remaining_amount_in_cents: number;
  remaining_count: number;
  max_age_seconds: number;
  forward_by: string | null;
}

export interface AccountRef {
  id: string;
  live_mode: boolean;
  default_currency: string;
}

export function capsOf(ctx: AppContext, _account: AccountRef): OfflineCaps {
  return { ...ctx.config.terminals.offline };
}

/** The policy of an account now, from its caps and what it holds stored. */
export function policyOf(ctx: AppContext, account: AccountRef): PolicyView {
  const caps = capsOf(ctx, account);
  const open = storedPaymentsStore(ctx.db).openTotals(account.id, account.live_mode);
  const remainingAmount = Math.max(0, caps.max_total_in_cents - open.amount);
  const remainingCount = Math.max(0, caps.max_count - open.count);
  // The oldest payment past its deadline blocks new ones: the terminal must forward first.
  const overdue = open.forward_by !== null && Date.parse(open.forward_by) <= ctx.clock.now();
  const allowed = caps.allowed && remainingAmount > 0 && remainingCount > 0 && !overdue;
  return {
    allowed,
    currency: account.default_currency,
    max_payment_in_cents: allowed ? Math.min(caps.max_payment_in_cents, remainingAmount) : 0,
    remaining_amount_in_cents: remainingAmount,
    remaining_count: remainingCount,
    max_age_seconds: caps.max_age_hours * 3600,
    forward_by: open.forward_by,
  };
}

/** The caps a payment of this amount would pass under `policy` (empty: it fits). */
export function capsPassed(ctx: AppContext, account: AccountRef, amount: number, currency: string): CapName[] {
  const caps = capsOf(ctx, account);
  const open = storedPaymentsStore(ctx.db).openTotals(account.id, account.live_mode);
  const passed: CapName[] = [];
  if (!caps.allowed) passed.push('not_allowed');
  if (currency !== account.default_currency) passed.push('currency');
  if (amount > caps.max_payment_in_cents) passed.push('max_payment');
  if (open.amount + amount > caps.max_total_in_cents) passed.push('max_total');
  if (open.count + 1 > caps.max_count) passed.push('max_count');
  if (open.forward_by !== null && Date.parse(open.forward_by) <= ctx.clock.now()) passed.push('max_age');
  return passed;
}

/** When a payment stored now must be forwarded by. */
export function forwardByFrom(ctx: AppContext, account: AccountRef, storedAtMs: number): string {
  return isoTime(storedAtMs + capsOf(ctx, account).max_age_hours * 3_600_000);
}
