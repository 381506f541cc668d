import type { AppContext } from '../../../context.js';
import { isoTime } from '../../../clock.js';
import { storedPaymentsStore, type OpenTotals } from './store.js';

/** The four caps of stored payments, per account and environment (docs/stored-payments.md). */
export interface OfflineCaps {
  allowed: boolean;
  max_payment_in_cents: number;
  max_total_in_cents: number;
  max_count: number;
  max_age_hours: number;
}

/** A terminal's own caps, beside its account's: null leaves that cap to the account alone. */
export type TerminalCaps = { [K in keyof OfflineCaps]: OfflineCaps[K] | null };

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

/**
 * One cap as the 422 `offline_cap_reached` and the API show it: whose it is, its value, what is left
 * under it now, and whether the charge asked about passes it.
 */
export interface CapLimit {
  cap: CapName;
  scope: 'account' | 'terminal';
  /** The cap's value: a boolean (not_allowed: whether allowed), the currency, cents, a count or hours. */
  value: boolean | string | number;
  /** What is left under it now (cents or a count); null where nothing is used up (allowed, currency, max_payment, max_age). */
  left: number | null;
  passed: boolean;
}

export interface AccountRef {
  id: string;
  live_mode: boolean;
  default_currency: string;
}

type Ref = Pick<AccountRef, 'id' | 'live_mode'>;

/** The account's standing caps: its own when set, else the box's (terminals.offline). */
export function standingCapsOf(ctx: AppContext, account: Ref): OfflineCaps {
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
export function capsOf(ctx: AppContext, account: Ref, override = activeOverrideOf(ctx, account)): OfflineCaps {
  const caps = standingCapsOf(ctx, account);
  if (!override) return caps;
  return { ...caps, ...(JSON.parse(override.caps) as Partial<OfflineCaps>), allowed: true };
}

/** The override in force now, if any: shown beside the policy. */
export function activeOverrideOf(ctx: AppContext, account: Ref) {
  return storedPaymentsStore(ctx.db).activeOverride(account.id, account.live_mode, isoTime(ctx.clock.now()));
}

/** A terminal's own caps: set for it, else the box's defaults for every terminal (terminals.offline_per_terminal). */
export function terminalCapsOf(ctx: AppContext, terminalId: string): TerminalCaps {
  const own = storedPaymentsStore(ctx.db).terminalCaps(terminalId);
  if (!own) return { ...ctx.config.terminals.offline_per_terminal };
  return {
    allowed: own.allowed === null ? null : own.allowed === 1,
    max_payment_in_cents: own.max_payment_in_cents,
    max_total_in_cents: own.max_total_in_cents,
    max_count: own.max_count,
    max_age_hours: own.max_age_hours,
  };
}

const left = (cap: number, used: number) => Math.max(0, cap - used);
const overdue = (ctx: AppContext, open: OpenTotals) => open.forward_by !== null && Date.parse(open.forward_by) <= ctx.clock.now();

/**
 * Every cap that bears on one terminal's next stored payment (its account's, and its own where
 * set), each with its value, what is left, and whether a payment of `amount` in `currency` passes
 * it. A manager's override forces stored payments on for the account's terminals too; a terminal's
 * own amounts and counts still hold under it.
 */
export function capLimits(ctx: AppContext, account: AccountRef, terminalId: string | null, amount: number, currency: string): CapLimit[] {
  return limitsWithTotals(ctx, account, terminalId, amount, currency).limits;
}

// Each query once: the bridge recomputes every terminal's policy every few seconds.
function limitsWithTotals(ctx: AppContext, account: AccountRef, terminalId: string | null, amount: number, currency: string) {
  const store = storedPaymentsStore(ctx.db);
  const override = activeOverrideOf(ctx, account);
  const caps = capsOf(ctx, account, override);
  const open = store.openTotals(account.id, account.live_mode);
  const limits: CapLimit[] = [
    { cap: 'not_allowed', scope: 'account', value: caps.allowed, left: null, passed: !caps.allowed },
    { cap: 'currency', scope: 'account', value: account.default_currency, left: null, passed: currency !== account.default_currency },
    { cap: 'max_payment', scope: 'account', value: caps.max_payment_in_cents, left: null, passed: amount > caps.max_payment_in_cents },
    {
      cap: 'max_total',
      scope: 'account',
      value: caps.max_total_in_cents,
      left: left(caps.max_total_in_cents, open.amount),
      passed: open.amount + amount > caps.max_total_in_cents,
    },
    { cap: 'max_count', scope: 'account', value: caps.max_count, left: left(caps.max_count, open.count), passed: open.count + 1 > caps.max_count },
    // The oldest payment past its deadline blocks new ones: the terminal must forward first.
    { cap: 'max_age', scope: 'account', value: caps.max_age_hours, left: null, passed: overdue(ctx, open) },
  ];
  if (terminalId === null) return { limits, open };
  const own = terminalCapsOf(ctx, terminalId);
  const forced = override !== undefined;
  // A terminal's own totals are read only when it has a cap that counts them.
  const mine = own.max_total_in_cents !== null || own.max_count !== null || own.max_age_hours !== null ? store.terminalOpenTotals(terminalId) : open;
  if (own.allowed !== null && !forced) limits.push({ cap: 'not_allowed', scope: 'terminal', value: own.allowed, left: null, passed: !own.allowed });
  if (own.max_payment_in_cents !== null) {
    limits.push({ cap: 'max_payment', scope: 'terminal', value: own.max_payment_in_cents, left: null, passed: amount > own.max_payment_in_cents });
  }
  if (own.max_total_in_cents !== null) {
    const v = own.max_total_in_cents;
    limits.push({ cap: 'max_total', scope: 'terminal', value: v, left: left(v, mine.amount), passed: mine.amount + amount > v });
  }
  if (own.max_count !== null) {
    limits.push({ cap: 'max_count', scope: 'terminal', value: own.max_count, left: left(own.max_count, mine.count), passed: mine.count + 1 > own.max_count });
  }
  if (own.max_age_hours !== null) limits.push({ cap: 'max_age', scope: 'terminal', value: own.max_age_hours, left: null, passed: overdue(ctx, mine) });
  return { limits, open };
}

/** The caps a payment of this amount would pass (empty: it fits), each named once, in the order of the list above. */
export function capsPassed(ctx: AppContext, account: AccountRef, amount: number, currency: string, terminalId: string | null = null): CapName[] {
  return [
    ...new Set(
      capLimits(ctx, account, terminalId, amount, currency)
        .filter((l) => l.passed)
        .map((l) => l.cap),
    ),
  ];
}

/** The policy of an account now (its terminals', or one terminal's), from the caps and what is stored. */
export function policyOf(ctx: AppContext, account: AccountRef, terminalId: string | null = null): PolicyView {
  const { limits, open } = limitsWithTotals(ctx, account, terminalId, 0, account.default_currency);
  const min = (cap: CapName, of: (l: CapLimit) => number) => Math.min(...limits.filter((l) => l.cap === cap).map(of));
  const remainingAmount = min('max_total', (l) => l.left!);
  const remainingCount = min('max_count', (l) => l.left!);
  const allowed =
    limits.every((l) => l.cap !== 'not_allowed' || l.value === true) &&
    remainingAmount > 0 &&
    remainingCount > 0 &&
    !limits.some((l) => l.cap === 'max_age' && l.passed);
  return {
    allowed,
    currency: account.default_currency,
    max_payment_in_cents: allowed
      ? Math.min(
          min('max_payment', (l) => l.value as number),
          remainingAmount,
        )
      : 0,
    remaining_amount_in_cents: remainingAmount,
    remaining_count: remainingCount,
    max_age_seconds: min('max_age', (l) => l.value as number) * 3600,
    forward_by: open.forward_by,
  };
}

/** When a payment stored now on this terminal must be forwarded by (the shorter of the two ages). */
export function forwardByFrom(ctx: AppContext, account: AccountRef, storedAtMs: number, terminalId: string | null = null): string {
  return isoTime(storedAtMs + policyOf(ctx, account, terminalId).max_age_seconds * 1000);
}
