import type { AppContext } from '../../../context.js';
import { isoTime } from '../../../clock.js';
import { newId } from '../../../ids.js';
import { invalid } from '../../../errors.js';
import { appendSyncRecord } from '../../../outbox/sync-records.js';
import { capsOf, standingCapsOf, terminalCapsOf, type OfflineCaps, type TerminalCaps } from './policy.js';
import { storedPaymentsStore, type OfflineAuditRow } from './store.js';

/**
 * Every change of the offline policy (an account's caps, a terminal's caps, a manager's override
 * and its end), each audited in the same transaction with who, why, and the caps before and after,
 * and reported to the central as an `offline_policy_change` record (stored/sync.ts).
 */

type Ref = { id: string; live_mode: boolean };

export interface PolicyChange {
  /** The person: a named manager (the page, the API) or the shell's `--by` (else the login name). */
  actor: string;
  reason: string;
}

/** An audit entry as the API, the CLI's JSON and the central show it: before and after are objects. */
export interface OfflineAuditEntry {
  id: string;
  account_id: string;
  live_mode: boolean;
  terminal_id: string | null;
  action: OfflineAuditRow['action'];
  actor: string;
  reason: string;
  before: Record<string, unknown>;
  after: Record<string, unknown>;
  at: string;
}

export const MAX_AGE_HOURS = 168;

function checkCaps(caps: Partial<Record<keyof OfflineCaps, unknown>>): void {
  const errors: Record<string, string> = {};
  for (const k of ['max_payment_in_cents', 'max_total_in_cents', 'max_count'] as const) {
    const v = caps[k];
    if (v !== undefined && v !== null && (!Number.isInteger(v) || (v as number) < 0)) errors[k] = 'must be a whole number ≥ 0';
  }
  const age = caps.max_age_hours;
  if (age !== undefined && age !== null && (!Number.isInteger(age) || (age as number) < 1 || (age as number) > MAX_AGE_HOURS)) {
    errors.max_age_hours = `must be a whole number of hours from 1 to ${MAX_AGE_HOURS} (card networks refuse older stored payments)`;
  }
  if (Object.keys(errors).length) throw invalid(errors);
}

function requireWhy(change: PolicyChange): void {
  if (!change.actor.trim() || !change.reason.trim()) throw invalid({ reason: 'who and why are required for every change of the offline policy' });
}

const given = <T extends object>(patch: T) => Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<T>;

/** Audits one change and reports it to the central, in the caller's transaction. */
function audit(
  ctx: AppContext,
  account: Ref,
  entry: { action: OfflineAuditRow['action']; terminalId?: string; before: object; after: object; change: PolicyChange },
): OfflineAuditEntry {
  const at = isoTime(ctx.clock.now());
  const row = {
    id: newId('oa'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    terminal_id: entry.terminalId ?? null,
    action: entry.action,
    actor: entry.change.actor.trim(),
    reason: entry.change.reason,
    before: JSON.stringify(entry.before),
    after: JSON.stringify(entry.after),
    at,
  };
  storedPaymentsStore(ctx.db).audit(row);
  const view = auditEntry({ ...row, seq: 0 });
  const { account_id: _a, live_mode: _l, ...payload } = view;
  appendSyncRecord(ctx.db, { kind: 'offline_policy_change', accountId: account.id, liveMode: account.live_mode, createdAt: at, payload });
  return view;
}

export function auditEntry(row: OfflineAuditRow): OfflineAuditEntry {
  return {
    id: row.id ?? `oa_seq${row.seq}`,
    account_id: row.account_id,
    live_mode: row.live_mode === 1,
    terminal_id: row.terminal_id ?? null,
    action: row.action,
    actor: row.actor,
    reason: row.reason,
    before: JSON.parse(row.before) as Record<string, unknown>,
    after: JSON.parse(row.after) as Record<string, unknown>,
    at: row.at,
  };
}

/** Sets an account's standing caps (the fields given; the rest keep their value), audited. Inside a transaction. */
export function setAccountCaps(ctx: AppContext, account: Ref, patch: Partial<OfflineCaps>, change: PolicyChange): OfflineCaps {
  requireWhy(change);
  checkCaps(patch);
  const before = standingCapsOf(ctx, account);
  const after: OfflineCaps = { ...before, ...given(patch) };
  storedPaymentsStore(ctx.db).setCaps({
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    ...after,
    allowed: after.allowed ? 1 : 0,
    updated_at: isoTime(ctx.clock.now()),
  });
  audit(ctx, account, { action: 'caps_set', before, after, change });
  return after;
}

/**
 * Sets a terminal's own caps beside its account's (the fields given; `null` clears one, leaving that
 * cap to the account), audited under its account. Inside a transaction.
 */
export function setTerminalCaps(ctx: AppContext, account: Ref, terminalId: string, patch: Partial<TerminalCaps>, change: PolicyChange): TerminalCaps {
  requireWhy(change);
  checkCaps(patch);
  const before = terminalCapsOf(ctx, terminalId);
  const after: TerminalCaps = { ...before, ...given(patch) };
  const bit = (v: boolean | null) => (v === null ? null : v ? 1 : 0);
  storedPaymentsStore(ctx.db).setTerminalCaps({
    terminal_id: terminalId,
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    ...after,
    allowed: bit(after.allowed),
    updated_at: isoTime(ctx.clock.now()),
  });
  audit(ctx, account, { action: 'terminal_caps_set', terminalId, before, after, change });
  return after;
}

/** A manager forces stored payments on (and raises the caps given) until `untilIso`, audited. Inside a transaction. */
export function allowOfflineUntil(
  ctx: AppContext,
  account: Ref,
  untilIso: string,
  raised: Partial<Omit<OfflineCaps, 'allowed'>>,
  change: PolicyChange,
): { id: string; until: string } {
  requireWhy(change);
  checkCaps(raised);
  const until = Date.parse(untilIso);
  if (!Number.isFinite(until) || until <= ctx.clock.now()) throw invalid({ until: 'must be a date-time in the future' });
  if (until - ctx.clock.now() > MAX_AGE_HOURS * 3_600_000) throw invalid({ until: `must be at most ${MAX_AGE_HOURS} hours from now` });
  const before = capsOf(ctx, account);
  const id = newId('ofo');
  storedPaymentsStore(ctx.db).insertOverride({
    id,
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    until_at: isoTime(until),
    caps: JSON.stringify(given(raised)),
    reason: change.reason,
    actor: change.actor.trim(),
    created_at: isoTime(ctx.clock.now()),
  });
  audit(ctx, account, { action: 'override_allow', before, after: { ...capsOf(ctx, account), until: isoTime(until) }, change });
  return { id, until: isoTime(until) };
}

/** Ends every override in force now, audited. Returns how many it ended. Inside a transaction. */
export function revokeOfflineOverrides(ctx: AppContext, account: Ref, change: PolicyChange): number {
  requireWhy(change);
  const before = capsOf(ctx, account);
  const n = storedPaymentsStore(ctx.db).revokeOverrides(account.id, account.live_mode, isoTime(ctx.clock.now()));
  if (n > 0) audit(ctx, account, { action: 'override_revoke', before, after: capsOf(ctx, account), change });
  return n;
}

export function offlineAudit(ctx: AppContext, account: Ref, limit = 100): OfflineAuditEntry[] {
  return storedPaymentsStore(ctx.db).auditOf(account.id, account.live_mode, limit).map(auditEntry);
}
