import type { Db } from '../db/database.js';
import { toStoredEvent, type StoredEvent } from '../outbox/events.js';
import { perDb } from '../db/per-db.js';
import { listCount } from '../db/list-counts.js';
import { DEEP, deepPage } from '../db/deep-pages.js';

export interface EventFeedQuery {
  accountIds: string[];
  liveMode: boolean;
  /** An exact event type (`transfer.sent`). */
  type?: string;
  /** A model group (`transfer`): every type that starts with `<group>.`. */
  group?: string;
  /** Inclusive bounds on `created_at`, as ISO UTC strings with milliseconds (the stored form). */
  from?: string;
  until?: string;
  limit: number;
  offset: number;
}

type Filter = 'type' | 'group' | 'none';

/**
 * Read access to the outbox for feeds (activities): newest first by time, then by sequence. The
 * statements are prepared once per filter shape; the account list travels as JSON so one statement
 * serves one account or a whole organization.
 */
class EventFeed {
  private readonly cache = new Map<string, { rows: ReturnType<Db['prepare']>; count: ReturnType<Db['prepare']> }>();

  constructor(private readonly db: Db) {}

  private statements(filter: Filter, dated: boolean, one: boolean) {
    const key = `${filter}:${dated}:${one}`;
    let s = this.cache.get(key);
    if (!s) {
      const where = [
        // One account named with `=`: events_account_time (its rowid, seq, after created_at) then
        // yields the page in its order; a list of accounts needs a sort.
        one ? 'account_id = @account' : 'account_id IN (SELECT value FROM json_each(@accounts))',
        'live_mode = @live_mode',
        // A group is a prefix range ('transfer.' <= type < 'transfer/'): LIKE would read `_` in
        // `payment_intent` as a wildcard.
        filter === 'type' ? 'type = @type' : filter === 'group' ? "type >= @group || '.' AND type < @group || '/'" : null,
        dated ? 'created_at >= @from AND created_at <= @until' : null,
      ]
        .filter(Boolean)
        .join(' AND ');
      s = {
        rows: this.db.prepare(`SELECT * FROM events WHERE ${where} ORDER BY created_at DESC, seq DESC LIMIT @limit OFFSET @offset`),
        count: this.db.prepare(`SELECT count(*) AS n FROM events WHERE ${where}`),
      };
      this.cache.set(key, s);
    }
    return s;
  }

  list(q: EventFeedQuery): { rows: StoredEvent[]; total: number } {
    const filter: Filter = q.type !== undefined ? 'type' : q.group !== undefined ? 'group' : 'none';
    const dated = q.from !== undefined && q.until !== undefined;
    const one = q.accountIds.length === 1;
    const s = this.statements(filter, dated, one);
    const params: Record<string, unknown> = { live_mode: q.liveMode ? 1 : 0 };
    if (one) params.account = q.accountIds[0];
    else params.accounts = JSON.stringify(q.accountIds);
    if (filter === 'type') params.type = q.type;
    if (filter === 'group') params.group = q.group;
    if (dated) {
      params.from = q.from;
      params.until = q.until;
    }
    // Without a filter the count is kept in list_counts by the table's triggers: no count of the outbox.
    const count = () => (filter === 'none' && !dated ? listCount(this.db, 'events', q.accountIds, q.liveMode) : (s.count.get(params) as { n: number }).n);
    type EventRow = Parameters<typeof toStoredEvent>[0];
    const deep = q.offset >= DEEP ? deepPage<EventRow>(this.db, s.rows.source, params, q.limit, q.offset, count) : undefined;
    if (deep) return { rows: deep.rows.map(toStoredEvent), total: deep.total! };
    const total = count();
    const rows = s.rows.all({ ...params, limit: q.limit, offset: q.offset }) as EventRow[];
    return { rows: rows.map(toStoredEvent), total };
  }
}

const feeds = perDb((db) => new EventFeed(db));

/** Events of some accounts in one environment, newest first, with the total for pagination headers. */
export function listEvents(db: Db, query: EventFeedQuery): { rows: StoredEvent[]; total: number } {
  return feeds(db).list(query);
}
