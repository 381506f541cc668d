import type { AppContext } from '../../../context.js';
import type { SyncOrigin } from '../../../sync/shared/registry.js';
import { paymentIntentRow } from '../../payments/service.js';
import { centralStoredStore } from './central-store.js';
import { MAX_AGE_HOURS } from './changes.js';

/**
 * What the central checks of a store's offline-policy changes and stored payments beyond their
 * schema (docs/sync.md, "A central that trusts no box"), at projection before the applier runs,
 * reading only the central's state so every core decides alike. A refused record is kept as
 * `rejected` with the code and field, and the store's stream goes on. The rules are those the box
 * itself keeps when it writes these facts (stored/changes.ts, stored/service.ts): a box that
 * breaks one is buggy or hostile, and the central's reads (`/offline_audit`, `/offline_policy`,
 * `/stored_payments`) must not show what no honest box could have written.
 */

type Refusal = { code: string; field: string; reason: string } | null;
type Rec<P> = { account_id: string; live_mode: boolean; created_at: string; payload: P };
type Caps = Record<string, unknown>;

interface ChangeFacts {
  id: string;
  terminal_id: string | null;
  action: 'caps_set' | 'terminal_caps_set' | 'override_allow' | 'override_revoke';
  before: Caps;
  after: Caps;
  at: string;
}

interface StoredFacts {
  id: string;
  terminal_id: string;
  checkout_id: string;
  payment_intent_id: string | null;
  status: 'approved' | 'declined' | 'expired';
  amount_in_cents: number;
  currency: string;
  stored_at: string;
  forward_by: string;
  forwarded_at: string | null;
  settled_at: string;
}

const CAPS = ['allowed', 'max_payment_in_cents', 'max_total_in_cents', 'max_count', 'max_age_hours'] as const;
const HOUR_MS = 3_600_000;

/** A terminal is one store's, under one account: one reported from elsewhere is not this store's to change or pay on. */
function terminalRefusal(ctx: AppContext, terminalId: string, rec: Rec<unknown>, origin: SyncOrigin): Refusal {
  const elsewhere = centralStoredStore(ctx.db).terminalElsewhere(terminalId, origin.storeId, rec.account_id, rec.live_mode);
  if (!elsewhere) return null;
  return {
    code: 'foreign_reference',
    field: 'payload.terminal_id',
    reason: `terminal ${terminalId} was reported by store ${elsewhere.origin_store_id} under account ${elsewhere.account_id}, not by this store under ${rec.account_id}`,
  };
}

/** Which caps an account-wide change must state in full (the box writes all five, never null). */
function missingCaps(caps: Caps): string | undefined {
  return CAPS.find((k) => caps[k] === undefined || caps[k] === null);
}

/** An `offline_policy_change` record: the audit entry is the record's own time, whole, and a step the store's policy allows. */
export function checkPolicyChange(ctx: AppContext, rec: Rec<ChangeFacts>, origin: SyncOrigin): Refusal {
  if (origin.restoring) return null;
  const p = rec.payload;
  if (p.at !== rec.created_at) {
    // The box writes both from one clock reading; an entry dated apart from its record escapes the time checks at receipt.
    return { code: 'inconsistent_payload', field: 'payload.at', reason: `the change is dated ${p.at}, its record ${rec.created_at}` };
  }
  if (p.action !== 'terminal_caps_set') {
    for (const side of ['before', 'after'] as const) {
      const missing = missingCaps(p[side]);
      if (missing)
        return {
          code: 'inconsistent_payload',
          field: `payload.${side}.${missing}`,
          reason: `an account's ${p.action} states every cap; ${missing} is missing`,
        };
    }
  }
  const until = p.after.until;
  if (p.action === 'override_allow') {
    const end = typeof until === 'string' ? Date.parse(until) : Number.NaN;
    const start = Date.parse(p.at);
    if (!(end > start) || end - start > MAX_AGE_HOURS * HOUR_MS) {
      return {
        code: 'inconsistent_payload',
        field: 'payload.after.until',
        reason: `an override ends after it is made and at most ${MAX_AGE_HOURS} hours later; made ${p.at}, until ${String(until)}`,
      };
    }
    if (p.after.allowed !== true) return { code: 'inconsistent_payload', field: 'payload.after.allowed', reason: 'an override allows stored payments' };
  } else if (until !== undefined) {
    return { code: 'inconsistent_payload', field: 'payload.after.until', reason: `only an override has an end; ${p.action} has none` };
  }
  if (p.action === 'override_revoke') {
    // The box audits a revoke only when it ended an override in force: this store must have reported one lasting past now.
    const last = centralStoredStore(ctx.db).lastOverride(origin.storeId, rec.account_id, rec.live_mode);
    const lastUntil = last?.action === 'override_allow' ? (JSON.parse(last.after) as Caps).until : undefined;
    if (typeof lastUntil !== 'string' || lastUntil <= p.at) {
      return {
        code: 'transition_not_allowed',
        field: 'payload.action',
        reason: `no override of account ${rec.account_id} reported by this store is in force at ${p.at}`,
      };
    }
  }
  return p.terminal_id ? terminalRefusal(ctx, p.terminal_id, rec, origin) : null;
}

/** A `stored_payment` record: its times in their order, its terminal this store's, and its payment intent (when held) agreeing. */
export function checkStoredPayment(ctx: AppContext, rec: Rec<StoredFacts>, origin: SyncOrigin): Refusal {
  if (origin.restoring) return null;
  const p = rec.payload;
  const order: Array<[string, string | null, string, string | null]> = [
    ['stored_at', p.stored_at, 'forward_by', p.forward_by],
    ['stored_at', p.stored_at, 'settled_at', p.settled_at],
    ['stored_at', p.stored_at, 'forwarded_at', p.forwarded_at],
    ['forwarded_at', p.forwarded_at, 'settled_at', p.settled_at],
  ];
  for (const [a, va, b, vb] of order) {
    if (va !== null && vb !== null && !(Date.parse(va) <= Date.parse(vb))) {
      return { code: 'inconsistent_payload', field: `payload.${b}`, reason: `${b} ${vb} is before ${a} ${va}` };
    }
  }
  if (p.status === 'approved' && p.forwarded_at === null) {
    return {
      code: 'inconsistent_payload',
      field: 'payload.forwarded_at',
      reason: 'an approved stored payment reached its processor: forwarded_at is required',
    };
  }
  if (Date.parse(p.forward_by) - Date.parse(p.stored_at) > MAX_AGE_HOURS * HOUR_MS) {
    return { code: 'inconsistent_payload', field: 'payload.forward_by', reason: `a stored payment waits at most ${MAX_AGE_HOURS} hours` };
  }
  const terminal = terminalRefusal(ctx, p.terminal_id, rec, origin);
  if (terminal) return terminal;
  // The payment intent's own record normally comes first; one held for review has not, and this one must not wait on it.
  const pa = p.payment_intent_id ? paymentIntentRow(ctx, [rec.account_id], rec.live_mode, p.payment_intent_id) : undefined;
  if (!pa) return null;
  const field = 'payload.payment_intent_id';
  if (pa.checkout_id !== p.checkout_id) {
    return { code: 'inconsistent_payload', field, reason: `payment ${pa.id} is of checkout ${pa.checkout_id} at the central, not ${p.checkout_id}` };
  }
  if (pa.amount_in_cents !== p.amount_in_cents || pa.currency !== p.currency) {
    return {
      code: 'amount_mismatch',
      field: 'payload.amount_in_cents',
      reason: `payment ${pa.id} is ${pa.amount_in_cents} ${pa.currency} cents at the central; the stored payment says ${p.amount_in_cents} ${p.currency}`,
    };
  }
  const contradicts = p.status === 'approved' ? pa.status === 'failed' : pa.status === 'succeeded';
  if (contradicts)
    return {
      code: 'transition_not_allowed',
      field: 'payload.status',
      reason: `payment ${pa.id} is ${pa.status} at the central; the stored payment says ${p.status}`,
    };
  return null;
}
