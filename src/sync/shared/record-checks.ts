import type { AppContext } from '../../context.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import type { SyncOrigin } from './registry.js';

/**
 * Rules the kinds' projection checks share (issue 32; each kind's `check` in its module's sync.ts):
 * a refusal with a code and the field, read from the central's state alone so every core decides
 * alike. A box taking back its own records after a restore (`origin.restoring`) is not checked:
 * they are its own past.
 */
export type CheckRefusal = { code: string; field: string; reason: string } | null;

/** What a check knows of the record: its account, environment and time. */
export interface CheckedRecord {
  account_id: string;
  live_mode: boolean;
  created_at: string;
}

/**
 * A time a payload carries (a sale's, a step's): not after its record, which the box writes after
 * the fact and the central checked at receipt against the push, and not before the pushing key's
 * account was made (offline sales may be days old, never older than the store). The box's clock
 * may run `sync.record_time_skew_ms` apart, as at receipt.
 */
export function payloadTimeRefusal(ctx: AppContext, rec: CheckedRecord, origin: SyncOrigin, field: string, value: unknown): CheckRefusal {
  if (value === undefined || value === null) return null;
  const at = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(at)) return { code: 'invalid_record_time', field, reason: `${field} ${JSON.stringify(value)} is not a time` };
  const skew = ctx.config.sync.record_time_skew_ms;
  if (at > Date.parse(rec.created_at) + skew) {
    return { code: 'record_in_future', field, reason: `${field} ${value} is after its record (${rec.created_at})` };
  }
  const joined = accountsOf(ctx).account(origin.keyAccountId)?.created_at;
  if (joined && at < Date.parse(joined) - skew) {
    return { code: 'record_before_join', field, reason: `${field} ${value} is before the store's account was made (${joined})` };
  }
  return null;
}

/**
 * Whether `account` is one the store's key acts for (the key's account, its sandbox, its connected
 * children and theirs).
 */
export function inKeyScope(ctx: AppContext, keyAccountId: string, account: Pick<Account, 'id' | 'sandbox_of' | 'parent_account_id'>): boolean {
  const live = account.sandbox_of ? accountsOf(ctx).account(account.sandbox_of) : account;
  return !!live && (live.id === keyAccountId || live.parent_account_id === keyAccountId);
}

/** An object the central holds under `owner` (account, environment) is the record's own, or the refusal naming `field`. */
export function ownerRefusal(
  rec: Pick<CheckedRecord, 'account_id' | 'live_mode'>,
  owner: { account_id: string; live_mode: boolean | number },
  field: string,
  what: string,
): CheckRefusal {
  if (owner.account_id === rec.account_id && Boolean(owner.live_mode) === rec.live_mode) return null;
  return { code: 'foreign_reference', field, reason: `${what} is not one of account ${rec.account_id} at the central` };
}

/**
 * Whether an object's machine takes it from `from` to `to` by any run of its events (`next`: the
 * states one event takes a state to). A store writes a record per change, but one of them may have
 * been held or refused, so the central accepts any path the machine allows: what is final stays final.
 */
export function machineReaches(next: (state: string) => Array<string | null>, from: string, to: string): boolean {
  const seen = new Set([from]);
  const queue = [from];
  while (queue.length > 0) {
    for (const s of next(queue.shift() as string)) {
      if (s === null || seen.has(s)) continue;
      if (s === to) return true;
      seen.add(s);
      queue.push(s);
    }
  }
  return from === to;
}

/**
 * The refusal of a pushed status that the object's machine cannot reach from the central's
 * (`what`: how the reason names the object, e.g. "booking bk_1"); null when `to` is reachable.
 */
export function transitionRefusal(
  what: string,
  next: (state: string) => Array<string | null>,
  from: string,
  to: string,
  field = 'payload.row.status',
): CheckRefusal {
  if (from === to || machineReaches(next, from, to)) return null;
  return { code: 'transition_not_allowed', field, reason: `${what} is ${from} at the central; its machine does not move it to ${to}` };
}
