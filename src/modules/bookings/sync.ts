import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { publicBaseUrl } from '../../config.js';
import type { PushKind, Rejection, SyncOrigin } from '../../sync/shared/registry.js';
import { nextState } from '../../lifecycle.js';
import { transitionRefusal, ownerRefusal, payloadTimeRefusal, type CheckRefusal, type CheckedRecord } from '../../sync/shared/record-checks.js';
import { bookableRows, ensureBookables } from '../bookables/service.js';
import { ensureClassSession, findClassSession } from './class-sessions/service.js';
import { feedsBlockNights } from '../calendar-feeds/service.js';
import { bookingsStoreOf } from './deps.js';
import { applyEvent } from './lifecycle.js';
import type { BookingRecord, BookingRefs } from './records.js';
import { publishBooking } from './feed-apply.js';
import { bookingMachine, holdsSlot, type BookingEvent, type BookingStatus } from './machine.js';
import type { BookingRow } from './store.js';
import { bookingView } from './views.js';

/** Why the central refuses a booking that collides with one it holds; the store cancels its own on this code. */
export const SLOT_TAKEN = 'slot_unavailable';
/** Why the store cancelled a booking the central refused (`cancellation_reason`). */
export const REFUSED_BY_CENTRAL = 'refused_by_central';

/** The fields of a `booking` record the central relies on (a record of an older posd lacks `row` and `refs`). */
export const BookingPayload = Type.Object({
  op: Type.String(),
  row: Type.Object({ id: Type.String(), status: Type.String(), service_id: Type.String(), updated_at: Type.String() }),
  occupancy: Type.Array(Type.Unknown()),
  refs: Type.Object({ services: Type.Array(Type.Unknown()), staff_members: Type.Array(Type.Unknown()), resources: Type.Array(Type.Unknown()) }),
});

/** What keeps occupancy rows: every state but cancelled (a completed or missed booking keeps its time, as at the store). */
const occupies = (status: BookingRow['status']) => status !== 'cancelled';

/**
 * A booking write from a store, applied at the central (sync): the booking with the store's ids and
 * times and the store as the owner of its lifecycle, its occupancy, and the bookables, class
 * session and series it names when the central lacks them. A state older than (or the same as) the
 * central's is ignored. When the booking starts occupying time at the central, the central decides:
 * a slot it already gave to another booking (say, booked online while the store was offline), a
 * full or cancelled class session, or nights a calendar feed blocks refuse the record (code
 * `slot_unavailable`), nothing written. Returns the refusal, or null. No events: the store's are the events.
 */
export function applyStoreBooking(ctx: AppContext, accountId: string, storeId: string | null, record: BookingRecord): { reason: string; code: string } | null {
  const store = bookingsStoreOf(ctx);
  const incoming: BookingRow = { ...record.row, account_id: accountId, origin_store_id: storeId };
  const existing = store.get(incoming.id);
  if (existing && (existing.account_id !== accountId || existing.live_mode !== incoming.live_mode)) {
    return { reason: `booking ${incoming.id} belongs to another account at the central`, code: 'booking_id_taken' };
  }
  if (existing && existing.updated_at > incoming.updated_at) return null;
  const takesTime = occupies(incoming.status) && (!existing || store.occupancyOf(incoming.id).length === 0);
  if (takesTime) {
    const taken = slotTaken(ctx, incoming, record);
    if (taken) return { reason: `booking ${incoming.id}: ${taken}`, code: SLOT_TAKEN };
  }
  const refs = ownedRefs(record.refs, accountId, incoming.live_mode);
  const foreign = foreignRef(ctx, refs, accountId);
  if (foreign) return { reason: `booking ${incoming.id} names ${foreign}, which belongs to another account at the central`, code: 'foreign_reference' };
  ensureBookables(ctx, refs);
  if (refs.class_session) ensureClassSession(ctx, refs.class_session);
  if (refs.series) store.insertSeriesRow(refs.series);
  if (existing) store.update(incoming);
  else store.insert(incoming);
  if (!occupies(incoming.status)) store.release(incoming.id);
  else if (takesTime) {
    for (const o of record.occupancy) {
      store.occupy({ ownerId: incoming.id, accountId, liveMode: incoming.live_mode === 1, subject: o.subject, startsAt: o.starts_at, endsAt: o.ends_at });
    }
  }
  // The account's other boxes learn the counter booking (and the slot it takes) through the feed;
  // the push engine tags it with this store's origin, so it does not come back here.
  publishBooking(ctx, incoming);
  return null;
}

/** The rows a record names, as rows of the pushing account (a store writes only its own accounts' rows). */
function ownedRefs(refs: BookingRefs, accountId: string, liveMode: number): BookingRefs {
  const own = <T extends { account_id: string; live_mode: number }>(r: T): T => ({ ...r, account_id: accountId, live_mode: liveMode });
  return {
    services: refs.services.map(own),
    staff_members: refs.staff_members.map(own),
    resources: refs.resources.map(own),
    class_session: refs.class_session && own(refs.class_session),
    series: refs.series && own(refs.series),
  };
}

/** A named row the central holds under another account, or null. */
function foreignRef(ctx: AppContext, refs: BookingRefs, accountId: string): string | null {
  const held = bookableRows(ctx, {
    services: refs.services.map((r) => r.id),
    staff: refs.staff_members.map((r) => r.id),
    resources: refs.resources.map((r) => r.id),
  });
  const session = refs.class_session && findClassSession(ctx, refs.class_session.id);
  const series = refs.series && bookingsStoreOf(ctx).series(refs.series.id);
  const other = [...held.services, ...held.staff_members, ...held.resources, session, series].find((r) => r && r.account_id !== accountId);
  return other ? other.id : null;
}

/** Why the central cannot give this booking its time, or null when it can. */
function slotTaken(ctx: AppContext, row: BookingRow, record: BookingRecord): string | null {
  const store = bookingsStoreOf(ctx);
  for (const o of record.occupancy) {
    const other = store.conflict(o.subject, o.starts_at, o.ends_at, row.id);
    if (other) return `${o.subject} from ${o.starts_at} to ${o.ends_at} is already held at the central by ${other}`;
  }
  if (row.kind === 'stay' && row.resource_id) {
    const stay = JSON.parse(row.stay ?? '{}') as { check_in_on?: string; check_out_on?: string };
    if (stay.check_in_on && stay.check_out_on && feedsBlockNights(ctx, row.resource_id, stay.check_in_on, stay.check_out_on)) {
      return `unit ${row.resource_id} is blocked by a calendar feed at the central on some of those nights`;
    }
  }
  if (row.class_session_id) {
    const session = findClassSession(ctx, row.class_session_id) ?? record.refs.class_session;
    if (session?.cancelled_at) return `class session ${session.id} was cancelled at the central`;
    if (session && findClassSession(ctx, session.id) && store.seatsTaken(session.id) >= session.capacity)
      return `class session ${session.id} is full at the central`;
  }
  return null;
}

/**
 * The central refused a booking of this box because its slot was taken there: the central decides,
 * so the booking is cancelled here through its lifecycle (`cancelled_by: system`, reason
 * `refused_by_central`; the slot is freed, the cancellation goes to the central as a record) and
 * `booking.cancelled` is emitted, in the transaction that moves the feed cursor. Nothing is refunded
 * automatically, as with any business-side cancellation (spec 3.1): the business refunds or rebooks.
 * A booking already cancelled is left alone; one already completed or missed keeps its state (the
 * day happened) and the decision stays listed in the status.
 */
export function applyBookingRejection(ctx: AppContext, rejection: Rejection): void {
  if (rejection.code !== SLOT_TAKEN || !rejection.payload) return;
  const id = (rejection.payload.row as { id?: unknown } | undefined)?.id ?? (rejection.payload.booking as { id?: unknown } | undefined)?.id;
  if (typeof id !== 'string') return;
  const row = bookingsStoreOf(ctx).get(id);
  if (!row || !holdsSlot(row.status)) {
    ctx.log.warn({ booking_id: id, status: row?.status }, 'sync: the central refused a booking this store no longer holds; left as it is');
    return;
  }
  const next = applyEvent(ctx, row, 'CANCEL', { cancelled_by: 'system', cancellation_reason: REFUSED_BY_CENTRAL, hold_expires_at: null });
  const at = isoTime(ctx.clock.now());
  ctx.outbox.emit({
    type: 'booking.cancelled',
    accountId: next.account_id,
    liveMode: next.live_mode === 1,
    objectId: next.id,
    payload: {
      id: next.id,
      event_type: 'booking.cancelled',
      created_at: at,
      reason: rejection.reason,
      sync_record_id: rejection.recordId,
      booking: bookingView(next, publicBaseUrl(ctx.config)),
    },
  });
}

const BOOKING_EVENTS: BookingEvent['type'][] = ['PAID', 'ACCEPT', 'DECLINE', 'CANCEL', 'EXPIRE', 'RESCHEDULE', 'CHECK_IN', 'COMPLETE', 'NO_SHOW'];

/**
 * What the central's state must allow for a pushed booking (issue 32, at projection): the row is in
 * the record's environment; a booking the central holds is the record's account's and, unless the
 * record is older (the applier skips it), its machine moves it to the record's status by its events
 * (a booking ended at the central stays ended); the write's time is neither after its record nor
 * before the store. Which slot it takes is the applier's decision (`slot_unavailable`), which the
 * store answers by cancelling its booking.
 */
function checkStoreBooking(ctx: AppContext, rec: CheckedRecord & { payload: BookingRecord }, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const row = rec.payload.row;
  if ((row.live_mode === 1) !== rec.live_mode) {
    return {
      code: 'inconsistent_payload',
      field: 'payload.row.live_mode',
      reason: `a ${rec.live_mode ? 'live' : 'test'} record carries a booking of the other environment`,
    };
  }
  const existing = bookingsStoreOf(ctx).get(row.id);
  if (existing) {
    const foreign = ownerRefusal(rec, existing, 'payload.row.id', `booking ${row.id}`);
    // The code the store already knows for this refusal (docs/sync-protocol.md).
    if (foreign) return { ...foreign, code: 'booking_id_taken' };
    if (existing.updated_at >= row.updated_at) return null;
    const next = (s: string) => BOOKING_EVENTS.map((type) => nextState(bookingMachine, s as BookingStatus, { type }));
    const refused = transitionRefusal(`booking ${row.id}`, next, existing.status, row.status);
    if (refused) return refused;
  }
  return payloadTimeRefusal(ctx, rec, origin, 'payload.row.updated_at', row.updated_at);
}

/**
 * A booking made or moved at the store (`booking`): written with the store's ids and, when it starts
 * taking time at the central, refused if that time is already taken there (the store then cancels
 * its booking: `applyBookingRejection`). Counted in reconciliation, never summed.
 */
export const bookingPush: PushKind<BookingRecord> = {
  payload: BookingPayload,
  malformed: 'booking record without row, occupancy or refs (written by an older posd?)',
  check: (ctx, record, origin) => checkStoreBooking(ctx, record, origin),
  apply: (ctx, record, origin) => applyStoreBooking(ctx, record.account_id, origin.restoring ? null : origin.storeId, record.payload),
  totals: () => null,
};
