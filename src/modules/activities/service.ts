import type { AppContext } from '../../context.js';
import { invalid } from '../../errors.js';
import { listEvents } from '../../events/feed.js';
import type { StoredEvent } from '../../outbox/events.js';
import type { Activity, ActivityQueryInput } from './schema.js';

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * A query time as the stored form (ISO UTC with milliseconds). A date alone is the start of that day
 * for `from_time` and its last millisecond for `until_time` (spec 4.2), in UTC like every stored time;
 * a date-time without an offset is UTC too.
 */
export function parseQueryTime(text: string, edge: 'start' | 'end'): string | null {
  const day = DATE_ONLY.exec(text);
  if (day) {
    const ms = Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3]));
    const d = new Date(ms);
    // Date.UTC rolls 2026-02-30 over to March: a date that moved is not a date.
    if (d.getUTCFullYear() !== Number(day[1]) || d.getUTCMonth() !== Number(day[2]) - 1 || d.getUTCDate() !== Number(day[3])) return null;
    return new Date(edge === 'start' ? ms : ms + 86_400_000 - 1).toISOString();
  }
  if (!DATE_TIME.test(text)) return null;
  const hasOffset = /(Z|[+-]\d{2}:?\d{2})$/i.test(text);
  const ms = Date.parse(hasOffset ? text : `${text}Z`);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

const DESCRIPTIONS: Record<string, string> = {
  'transfer.sent': 'Transfer sent',
  'transfer.received': 'Transfer received',
  'transfer.pending': 'Transfer in evaluation',
  'transfer.in_review': 'Transfer in review',
  'transfer.cancelled': 'Transfer cancelled',
  'withdrawal.create': 'Withdrawal requested',
  'withdrawal.update': 'Withdrawal updated',
  'refund.create': 'Refund',
  'intent.succeeded': 'Payment received',
  'intent.failed': 'Payment failed',
};

function describe(event: StoredEvent): string {
  const p = event.payload;
  if (typeof p.description === 'string' && p.description) return p.description;
  if (typeof p.note === 'string' && p.note) return `${DESCRIPTIONS[event.type] ?? event.type}: ${p.note}`;
  if (event.type === 'withdrawal.update' && typeof p.status === 'string') return `Withdrawal ${p.status.replace('_', ' ')}`;
  return DESCRIPTIONS[event.type] ?? event.type.replace(/[._]/g, ' ');
}

/** An event seen as an activity: the same suffix under the `act_` prefix, so it is stable and unique. */
export function activityOf(event: StoredEvent, withAccount: boolean): Activity {
  const p = event.payload;
  const activity: Activity = {
    id: `act_${event.id.slice(event.id.indexOf('_') + 1)}`,
    type: event.type,
    model: event.type.split('.')[0],
    object_id: event.object_id ?? (typeof p.id === 'string' ? p.id : null),
    amount_in_cents: Number.isSafeInteger(p.amount_in_cents) ? (p.amount_in_cents as number) : null,
    currency: typeof p.currency === 'string' ? p.currency : null,
    description: describe(event),
    created_at: event.created_at,
  };
  if (withAccount) activity.account_id = event.account_id;
  return activity;
}

export function listActivities(
  ctx: AppContext,
  scope: { accountIds: string[]; liveMode: boolean; aggregate: boolean },
  query: ActivityQueryInput,
  page: { limit: number; offset: number },
): { rows: Activity[]; total: number } {
  const errors: Record<string, string[]> = {};
  const from = query.from_time === undefined ? undefined : parseQueryTime(query.from_time, 'start');
  const until = query.until_time === undefined ? undefined : parseQueryTime(query.until_time, 'end');
  if (from === null) errors.from_time = ['must be a date (YYYY-MM-DD) or an ISO 8601 date-time'];
  if (until === null) errors.until_time = ['must be a date (YYYY-MM-DD) or an ISO 8601 date-time'];
  if (Object.keys(errors).length > 0) throw invalid(errors);
  // The pair applies only when both are sent (spec 4.2): one alone is ignored, not an error.
  const dated = from && until ? { from, until } : {};
  const byType = query.type === undefined ? {} : query.type.includes('.') ? { type: query.type } : { group: query.type };
  const { rows, total } = listEvents(ctx.db, {
    accountIds: scope.accountIds,
    liveMode: scope.liveMode,
    ...byType,
    ...dated,
    limit: page.limit,
    offset: page.offset,
  });
  return { rows: rows.map((e) => activityOf(e, scope.aggregate)), total };
}
