import type { AppContext } from '../../context.js';
import { appendFeedChange, publishesFeed } from '../../outbox/feed-changes.js';
import { bookingsStoreOf } from './deps.js';
import type { BookingRow } from './store.js';

/** One span of time a booking or class session holds on a subject (`staff:…`, `resource:…`, `night:…`). */
export interface Occupancy {
  subject: string;
  starts_at: string;
  ends_at: string;
}

/** A booking as the feed carries it: its row, the time it holds, and its series when it has one. */
export interface FeedBooking {
  booking: BookingRow;
  occupancy: Occupancy[];
  series: { id: string; frequency: string; interval: number; count: number; created_at: string } | null;
}

/**
 * At a central, a booking made or changed (online, by central operations, or applied from a box's
 * push: the other boxes of the account learn it) reaches the account's boxes with the time it holds,
 * so the counter sees the slot taken. Called where every booking write records itself
 * (`recordSync`). A no-op at a store.
 */
export function publishBooking(ctx: AppContext, row: BookingRow): void {
  // Asked first: at a store (every booking of the counter) the payload below would be read for nothing.
  if (!publishesFeed(ctx.db)) return;
  const store = bookingsStoreOf(ctx);
  const series = row.booking_series_id ? (store.series(row.booking_series_id) ?? null) : null;
  const payload: FeedBooking = { booking: row, occupancy: store.occupancyOf(row.id), series };
  appendFeedChange(ctx.db, {
    kind: 'booking',
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    objectId: row.id,
    payload: { ...payload },
    createdAt: row.updated_at,
  });
}

/** The time an owner holds, set to the central's (released when the booking stops holding it). */
export function replaceOccupancy(ctx: AppContext, ownerId: string, accountId: string, liveMode: boolean, spans: Occupancy[]): void {
  const store = bookingsStoreOf(ctx);
  store.release(ownerId);
  for (const o of spans) store.occupy({ ownerId, accountId, liveMode, subject: o.subject, startsAt: o.starts_at, endsAt: o.ends_at });
}

/**
 * A booking learnt from the central's feed: inserted with the central's id, or set to the central's
 * state unless this box's copy is newer, and its held time made the central's. The central decides:
 * a slot the central gave away is taken here even if a counter booking of this box overlaps it
 * (that booking is refused when it reaches the central). No events, no sync record.
 */
export function applyCentralBooking(ctx: AppContext, p: FeedBooking): void {
  const store = bookingsStoreOf(ctx);
  const b = p.booking;
  if (p.series && !store.series(p.series.id)) {
    store.insertSeries(p.series.id, b.account_id, b.live_mode === 1, p.series.frequency, p.series.interval, p.series.count, p.series.created_at);
  }
  const cur = store.get(b.id);
  if (cur && cur.updated_at > b.updated_at) return;
  if (cur) store.update(b);
  else store.insert(b);
  replaceOccupancy(ctx, b.id, b.account_id, b.live_mode === 1, p.occupancy);
}
