import { tx } from '../../../db/database.js';
import type { AppContext } from '../../../context.js';
import type { PushRecord } from '../../shared/wire.js';
import { accountsOf } from '../../../accounts/service.js';
import { centralSide } from '../sync-store.js';
import { publishRefusal } from './refusal.js';
import type { RecordRefusal } from './receipt.js';

/** The prefix of a held record's reason while it waits for an operator's review. */
export const REVIEW_PREFIX = 'review: ';

type Weighed = Pick<PushRecord, 'kind' | 'payload' | 'created_at'>;

/** What a record weighs (a money-moving kind's reconciliation totals: a sale's or payment's amount), or null. */
function weightOf(ctx: AppContext, r: Weighed): { currency: string; amount: number } | null {
  const t = ctx.registry.sync.weightOf(r.kind, r.payload);
  return t && t.amount_in_cents > 0 ? { currency: t.currency, amount: t.amount_in_cents } : null;
}

/** The running sum of one store's applied money for one UTC day and currency, kept in sync_state by the projector. */
const dayKey = (storeId: string, r: Weighed, currency: string) => `review_day:${storeId}:${r.created_at.slice(0, 10)}:${currency}`;

/**
 * Money the central cannot see move (docs/sync.md, "A central that trusts no box"): a record
 * weighing more than `sync.review.per_record_cents`, or taking its store's applied money of that
 * UTC day and currency past `sync.review.per_day_cents`, is held for review before its applier runs,
 * so nothing it would post reaches a balance the central pays out; the store's stream goes on.
 * Decided from the central's state alone (the day's sums are written by the projector as it
 * applies), so every core decides alike. 0 turns a threshold off.
 */
export function reviewHold(ctx: AppContext, r: Weighed, storeId: string): RecordRefusal | null {
  const w = weightOf(ctx, r);
  if (!w) return null;
  const { per_record_cents: perRecord, per_day_cents: perDay } = ctx.config.sync.review;
  if (perRecord > 0 && w.amount > perRecord) {
    return { code: 'held_for_review', field: 'payload', reason: `${w.amount} ${w.currency} cents is over sync.review.per_record_cents (${perRecord})` };
  }
  if (perDay > 0) {
    const sum = Number(centralSide(ctx.db).state(dayKey(storeId, r, w.currency)) ?? 0);
    if (sum + w.amount > perDay) {
      return {
        code: 'held_for_review',
        field: 'payload',
        reason: `the store's ${r.created_at.slice(0, 10)} in ${w.currency} would reach ${sum + w.amount} cents, over sync.review.per_day_cents (${perDay})`,
      };
    }
  }
  return null;
}

/** Adds an applied record's weight to its store's day (inside the projector's transaction). */
export function countTowardsDay(ctx: AppContext, r: Weighed, storeId: string): void {
  const w = weightOf(ctx, r);
  if (!w) return;
  const store = centralSide(ctx.db);
  const key = dayKey(storeId, r, w.currency);
  store.setState(key, Number(store.state(key) ?? 0) + w.amount);
}

/**
 * An operator's decision about a record held for review (`posd sync held`, the central's page):
 * `release` lets the held sweep apply it past the thresholds; `reject` refuses it for good and tells
 * the pushing box in its feed. The note (who and why) and the time stay with the record: the audit.
 * False when the record is not held for review (decided meanwhile, or never held).
 */
export function decideHeld(ctx: Pick<AppContext, 'db' | 'log' | 'clock'>, id: string, decision: 'release' | 'reject', note: string, now: string): boolean {
  const store = centralSide(ctx.db);
  // Through tx: on a chain's core the decision is appended to the central's log before it commits.
  return tx(ctx.db, () => {
    if (decision === 'release') return store.releaseReview(id, note, now);
    const row = store.received(id);
    const account = row && accountsOf(ctx).account(row.account_id);
    if (!row || !account || !store.rejectReview(id, `review_rejected (payload): ${note}`, note, now)) return false;
    publishRefusal(
      ctx,
      { ...row, live_mode: row.live_mode === 1 },
      { storeId: row.store_id, organizationId: account.organization_id, now, stage: 'projection' },
      { reason: note, code: 'review_rejected', field: 'payload' },
    );
    return true;
  });
}
