import type { AppContext } from '../../../context.js';
import type { Account } from '../../../accounts/service.js';
import { tx } from '../../../db/database.js';
import { ApiError, invalid, notFound } from '../../../errors.js';
import { isoTime } from '../../../clock.js';
import { newId } from '../../../ids.js';
import { resourceRow, serviceRow, staffRow } from '../../bookables/service.js';
import { bookingsStoreOf } from '../deps.js';
import { classSessionsStore, type ClassSessionRow, type ClassSessionsStore, type SessionFilter } from './store.js';
import type { ClassSessionCreate, ClassSessionView } from './schema.js';
import { appendFeedChange } from '../../../outbox/feed-changes.js';
import { replaceOccupancy, type Occupancy } from '../feed-apply.js';
import { perDb } from '../../../db/per-db.js';

/** A class session as the feed carries it: its row and the staff and resource time it holds. */
export interface FeedClassSession {
  session: ClassSessionRow;
  occupancy: Occupancy[];
}

/**
 * Class sessions are scheduled at the central (with the bookables they use): one made or cancelled
 * there reaches the account's boxes (feed kind `class_session`). A no-op at a store.
 */
export function publishClassSession(ctx: AppContext, id: string): void {
  const session = storeOf(ctx).get(id)!;
  const payload: FeedClassSession = { session, occupancy: bookingsStoreOf(ctx).occupancyOf(id) };
  appendFeedChange(ctx.db, {
    kind: 'class_session',
    accountId: session.account_id,
    liveMode: session.live_mode === 1,
    objectId: id,
    payload: { ...payload },
    createdAt: session.cancelled_at ?? session.created_at,
  });
}

/** A class session learnt from the central's feed: inserted, or cancelled as there; its held time as the central's. */
export function applyCentralClassSession(ctx: AppContext, p: FeedClassSession): void {
  const store = storeOf(ctx);
  const cur = store.get(p.session.id);
  if (!cur) store.insert(p.session);
  else if (p.session.cancelled_at && !cur.cancelled_at) store.cancel(cur.id, p.session.cancelled_at);
  replaceOccupancy(ctx, p.session.id, p.session.account_id, p.session.live_mode === 1, p.occupancy);
}

const stores = perDb(classSessionsStore);
export function storeOf(ctx: AppContext): ClassSessionsStore {
  return stores(ctx.db);
}

export function classSessionRow(ctx: AppContext, account: Account, id: string): ClassSessionRow {
  const row = storeOf(ctx).get(id);
  if (!row || row.account_id !== account.id || (row.live_mode === 1) !== account.live_mode) throw notFound('class session', id);
  return row;
}

/** A session by id whoever owns it (sync: a store's booking names it), or undefined. */
export function findClassSession(ctx: AppContext, id: string): ClassSessionRow | undefined {
  return storeOf(ctx).get(id);
}

/** A session made elsewhere (a store's, at its central), written once with its id; its bookables first. */
export function ensureClassSession(ctx: AppContext, row: ClassSessionRow): void {
  if (!storeOf(ctx).get(row.id)) storeOf(ctx).insert(row);
}

export function classSessionView(ctx: AppContext, row: ClassSessionRow): ClassSessionView {
  const seats = bookingsStoreOf(ctx).seatIds(row.id);
  return {
    id: row.id,
    account_id: row.account_id,
    service_id: row.service_id,
    name: row.name,
    staff_member_id: row.staff_member_id,
    resource_id: row.resource_id,
    starts_at: row.starts_at,
    ends_at: row.ends_at,
    capacity: row.capacity,
    seats_taken: seats.length,
    // A cancelled session takes no seats: reporting its capacity as left would invite bookings.
    seats_left: row.cancelled_at ? 0 : Math.max(0, row.capacity - seats.length),
    seat_booking_ids: seats,
    cancelled_at: row.cancelled_at,
    live_mode: row.live_mode === 1,
    created_at: row.created_at,
  };
}

function ref<T>(field: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ApiError && err.code === 'not_found') throw invalid({ [field]: err.message });
    throw err;
  }
}

/**
 * A session of a class service. Its instructor and room are taken for the session's time like any
 * appointment's, so an appointment cannot land on a class and the other way round.
 */
export function createClassSession(ctx: AppContext, account: Account, b: ClassSessionCreate): ClassSessionView {
  const service = ref('service_id', () => serviceRow(ctx, account, b.service_id));
  if (service.kind !== 'class') throw invalid({ service_id: `service ${service.id} is a ${service.kind}, not a class` });
  const start = Date.parse(b.starts_at);
  const end = b.ends_at ? Date.parse(b.ends_at) : start + service.duration_minutes * 60_000;
  if (end <= start) throw invalid({ ends_at: 'must be after starts_at' });
  const capacity = b.capacity ?? service.capacity;
  if (!capacity) throw invalid({ capacity: 'is required when the class has no capacity' });
  if (b.staff_member_id) ref('staff_member_id', () => staffRow(ctx, account, b.staff_member_id!));
  if (b.resource_id) ref('resource_id', () => resourceRow(ctx, account, b.resource_id!));
  const now = isoTime(ctx.clock.now());
  const row: ClassSessionRow = {
    id: newId('cls'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    service_id: service.id,
    name: b.name ?? service.name,
    staff_member_id: b.staff_member_id ?? null,
    resource_id: b.resource_id ?? null,
    starts_at: isoTime(start),
    ends_at: isoTime(end),
    capacity,
    cancelled_at: null,
    created_at: now,
  };
  const bookings = bookingsStoreOf(ctx);
  tx(ctx.db, () => {
    const subjects = [row.staff_member_id && `staff:${row.staff_member_id}`, row.resource_id && `resource:${row.resource_id}`].filter(Boolean) as string[];
    for (const subject of subjects) {
      if (bookings.conflict(subject, row.starts_at, row.ends_at)) {
        throw new ApiError('slot_unavailable', {
          message: `The ${subject.startsWith('staff:') ? 'staff member' : 'resource'} is already booked at that time.`,
        });
      }
    }
    storeOf(ctx).insert(row);
    for (const subject of subjects) {
      bookings.occupy({ ownerId: row.id, accountId: account.id, liveMode: account.live_mode, subject, startsAt: row.starts_at, endsAt: row.ends_at });
    }
    publishClassSession(ctx, row.id);
  });
  return classSessionView(ctx, row);
}

export function listClassSessions(ctx: AppContext, f: SessionFilter, limit: number, offset: number) {
  const { rows, total } = storeOf(ctx).list(f, limit, offset);
  return { rows: rows.map((r) => classSessionView(ctx, r)), total };
}
