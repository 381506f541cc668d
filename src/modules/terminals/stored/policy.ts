import type { AppContext } from '../../../context.js';
import { isoTime } from '../../../clock.js';
import { newId } from '../../../ids.js';
import { invalid } from '../../../errors.js';
import { storedPaymentsStore, type OfflineAuditRow } from './store.js';

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

/** The account's standing caps: its own when set, else the box's (terminals.offline). */
export function standingCapsOf(ctx: AppContext, account: Pick<AccountRef, 'id' | 'live_mode'>): OfflineCaps {
  const own = storedPaymentsStore(ctx.db).caps(account.id, account.live_mode);
  if (!own) return { ...ctx.config.terminals.offline };
  return {
    allowed: own.allowed === 1,
    max_payment_in_cents: own.max_payment_in_cents,
    max_total_in_cents: own.max_total_in_cents,
    max_count: own.max_count,
    max_age_hours: own.max_age_hours,
  };
}

/** The caps in force now: the standing ones, under a manager's override while it lasts. */
export function capsOf(ctx: AppContext, account: Pick<AccountRef, 'id' | 'live_mode'>): OfflineCaps {
  const caps = standingCapsOf(ctx, account);
  const override = storedPaymentsStore(ctx.db).activeOverride(account.id, account.live_mode, isoTime(ctx.clock.now()));
  if (!override) return caps;
  return { ...caps, ...(JSON.parse(override.caps) as Partial<OfflineCaps>), allowed: true };
}

/** The override in force now, if any: shown beside the policy. */
export function activeOverrideOf(ctx: AppContext, account: Pick<AccountRef, 'id' | 'live_mode'>) {
  return storedPaymentsStore(ctx.db).activeOverride(account.id, account.live_mode, isoTime(ctx.clock.now()));
}

const MAX_AGE_HOURS = 168;

function checkCaps(caps: Partial<OfflineCaps>): void {
  const errors: Record<string, string> = {};
  for (const k of ['max_payment_in_cents', 'max_total_in_cents', 'max_count'] as const) {
    const v = caps[k];
    if (v !== undefined && (!Number.isInteger(v) || v < 0)) errors[k] = 'must be a whole number ≥ 0';
  }
  const age = caps.max_age_hours;
  if (age !== undefined && (!Number.isInteger(age) || age < 1 || age > MAX_AGE_HOURS)) {
    errors.max_age_hours = `must be a whole number of hours from 1 to ${MAX_AGE_HOURS} (card networks refuse older stored payments)`;
  }
  if (Object.keys(errors).length) throw invalid(errors);
}

export interface PolicyChange {
  actor: string;
  reason: string;
}

function requireWhy(change: PolicyChange): void {
  if (!change.actor.trim() || !change.reason.trim()) throw invalid({ reason: 'who and why are required for every change of the offline policy' });
}

/** Sets an account's standing caps (the fields given; the rest keep their value), audited. Inside a transaction. */
export function setAccountCaps(ctx: AppContext, account: Pick<AccountRef, 'id' | 'live_mode'>, patch: Partial<OfflineCaps>, change: PolicyChange): OfflineCaps {
  requireWhy(change);
  checkCaps(patch);
  const store = storedPaymentsStore(ctx.db);
  const before = standingCapsOf(ctx, account);
  const after: OfflineCaps = { ...before, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) };
  const at = isoTime(ctx.clock.now());
  store.setCaps({ account_id: account.id, live_mode: account.live_mode ? 1 : 0, ...after, allowed: after.allowed ? 1 : 0, updated_at: at });
  store.audit({ account_id: account.id, live_mode: account.live_mode ? 1 : 0, action: 'caps_set', actor: change.actor, reason: change.reason, before: JSON.stringify(before), after: JSON.stringify(after), at });
  return after;
}

/** A manager forces stored payments on (and raises the caps given) until `untilIso`, audited. Inside a transaction. */
export function allowOfflineUntil(
  ctx: AppContext,
  account: Pick<AccountRef, 'id' | 'live_mode'>,
  untilIso: string,
  raised: Partial<Omit<OfflineCaps, 'allowed'>>,
  change: PolicyChange,
): { id: string; until: string } {
  requireWhy(change);
  checkCaps(raised);
  const until = Date.parse(untilIso);
  if (!Number.isFinite(until) || until <= ctx.clock.now()) throw invalid({ until: 'must be a date-time in the future' });
  if (until - ctx.clock.now() > MAX_AGE_HOURS * 3_600_000) throw invalid({ until: `must be at most ${MAX_AGE_HOURS} hours from now` });
  const store = storedPaymentsStore(ctx.db);
  const before = capsOf(ctx, account);
  const at = isoTime(ctx.clock.now());
  const id = newId('ofo');
  const caps = Object.fromEntries(Object.entries(raised).filter(([, v]) => v !== undefined));
  store.insertOverride({ id, account_id: account.id, live_mode: account.live_mode ? 1 : 0, until_at: isoTime(until), caps: JSON.stringify(caps), reason: change.reason, actor: change.actor, created_at: at });
  const after = capsOf(ctx, account);
  store.audit({
    account_id: account.id, live_mode: account.live_mode ? 1 : 0, action: 'override_allow', actor: change.actor, reason: change.reason,
    before: JSON.stringify(before), after: JSON.stringify({ ...after, until: isoTime(until) }), at,
  });
  return { id, until: isoTime(until) };
}

/** Ends every override in force now, audited. Returns how many it ended. Inside a transaction. */
export function revokeOfflineOverrides(ctx: AppContext, account: Pick<AccountRef, 'id' | 'live_mode'>, change: PolicyChange): number {
  requireWhy(change);
  const store = storedPaymentsStore(ctx.db);
  const before = capsOf(ctx, account);
  const at = isoTime(ctx.clock.now());
  const n = store.revokeOverrides(account.id, account.live_mode, at);
  if (n > 0) {
    store.audit({
      account_id: account.id, live_mode: account.live_mode ? 1 : 0, action: 'override_revoke', actor: change.actor, reason: change.reason,
      before: JSON.stringify(before), after: JSON.stringify(capsOf(ctx, account)), at,
    });
  }
  return n;
}

export function offlineAudit(ctx: AppContext, account: Pick<AccountRef, 'id' | 'live_mode'>, limit = 100): OfflineAuditRow[] {
  return storedPaymentsStore(ctx.db).auditOf(account.id, account.live_mode, limit);
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
