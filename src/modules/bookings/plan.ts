import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import { ApiError, invalid } from '../../errors.js';
import { isoTime } from '../../clock.js';
import { resourceRow, serviceRow, staffRow, unitsOfRoomType } from '../bookables/service.js';
import type { ServiceRow } from '../bookables/service.js';
import { classSessionRow } from './class-sessions/service.js';
import { feedsBlockNights } from '../calendar-feeds/service.js';
import { bookingsStoreOf } from './deps.js';
import type { Segment, Stay } from './schema.js';

const MINUTE = 60_000;
const DAY = 86_400_000;
/** A start a little in the past is a walk-in typed late or a clock skew, not a booking of the past. */
const PAST_GRACE_MS = 5 * MINUTE;

export interface Target {
  service_id?: string;
  starts_at?: string;
  staff_member_id?: string | null;
  resource_id?: string | null;
  class_session_id?: string;
  stay?: { room_type_id: string; unit_id?: string | null; check_in_on: string; check_out_on: string; guests: number };
}

export interface Occupation {
  subject: string;
  startsAt: string;
  endsAt: string;
}

export interface Plan {
  kind: 'appointment' | 'class_seat' | 'stay';
  service: ServiceRow;
  startsAt: string;
  endsAt: string;
  segments: Segment[];
  staffMemberId: string | null;
  resourceId: string | null;
  classSessionId: string | null;
  stay: Stay | null;
  totalInCents: number;
  currency: string;
  occupancy: Occupation[];
}

export function slotUnavailable(message: string, extra: Record<string, unknown> = {}): ApiError {
  return new ApiError('slot_unavailable', { message, extra });
}

/**
 * Works out what a booking occupies and checks it is free. Must run inside the booking's IMMEDIATE
 * transaction: the check and the insert that follows are then one step for every other writer, so
 * two requests for the same slot can never both pass. `exceptOwner` ignores a booking's own rows
 * (rescheduling moves a booking onto time it partly holds already).
 */
export function planBooking(ctx: AppContext, account: Account, t: Target, exceptOwner = ''): Plan {
  const kinds = [t.stay !== undefined, t.class_session_id !== undefined, t.service_id !== undefined || t.starts_at !== undefined].filter(Boolean).length;
  if (kinds !== 1) {
    throw invalid({ '(body)': 'send exactly one of: service_id with starts_at (appointment), class_session_id (class seat), stay (lodging)' });
  }
  if (t.stay) return planStay(ctx, account, t.stay, exceptOwner);
  if (t.class_session_id) return planSeat(ctx, account, t.class_session_id);
  return planAppointment(ctx, account, t, exceptOwner);
}

function refField<T>(field: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ApiError && err.code === 'not_found') throw invalid({ [field]: err.message });
    throw err;
  }
}

function free(ctx: AppContext, o: Occupation, exceptOwner: string): boolean {
  return bookingsStoreOf(ctx).conflict(o.subject, o.startsAt, o.endsAt, exceptOwner) === undefined;
}

function planAppointment(ctx: AppContext, account: Account, t: Target, exceptOwner: string): Plan {
  const errors: Record<string, string> = {};
  if (!t.service_id) errors.service_id = 'is required for an appointment';
  if (!t.starts_at) errors.starts_at = 'is required for an appointment';
  if (!t.staff_member_id && !t.resource_id) errors.staff_member_id = 'send a staff_member_id or a resource_id to book with';
  if (Object.keys(errors).length) throw invalid(errors);
  const service = refField('service_id', () => serviceRow(ctx, account, t.service_id!));
  if (service.kind !== 'appointment') throw invalid({ service_id: `service ${service.id} is a ${service.kind}, not an appointment` });
  if (!service.active) throw invalid({ service_id: 'the service is not active' });
  const start = Date.parse(t.starts_at!);
  if (start < ctx.clock.now() - PAST_GRACE_MS) throw invalid({ starts_at: 'must not be in the past' });
  if (t.staff_member_id) {
    const staff = refField('staff_member_id', () => staffRow(ctx, account, t.staff_member_id!));
    const offers: string[] = JSON.parse(staff.service_ids);
    if (!staff.active) throw invalid({ staff_member_id: 'the staff member is not active' });
    if (offers.length > 0 && !offers.includes(service.id)) throw invalid({ staff_member_id: 'the staff member does not offer this service' });
  }
  if (t.resource_id) {
    const res = refField('resource_id', () => resourceRow(ctx, account, t.resource_id!));
    if (!res.active) throw invalid({ resource_id: 'the resource is not active' });
    if (res.kind === 'lodging_unit') throw invalid({ resource_id: 'a lodging unit is booked with a stay' });
  }
  const staffId = t.staff_member_id ?? null;
  const resourceId = t.resource_id ?? null;
  const seg = (kind: Segment['kind'], from: number, to: number): Segment => ({
    service_id: service.id,
    product_id: service.product_id,
    product_variant_id: null,
    staff_member_id: staffId,
    resource_id: resourceId,
    kind,
    starts_at: isoTime(from),
    ends_at: isoTime(to),
  });
  const firstEnd = start + service.duration_minutes * MINUTE;
  const segments = [seg('service', start, firstEnd)];
  let end = firstEnd;
  if (service.processing_minutes > 0) {
    // The staff member is free while the service processes (colour sets, a cast dries); the
    // chair or room stays taken from the first minute to the last.
    const finalStart = firstEnd + service.processing_minutes * MINUTE;
    end = finalStart + service.final_minutes * MINUTE;
    segments.push(seg('processing_final', finalStart, end));
  }
  const occupancy: Occupation[] = [];
  if (staffId) for (const s of segments) occupancy.push({ subject: `staff:${staffId}`, startsAt: s.starts_at, endsAt: s.ends_at });
  if (resourceId) occupancy.push({ subject: `resource:${resourceId}`, startsAt: isoTime(start), endsAt: isoTime(end) });
  for (const o of occupancy) {
    if (!free(ctx, o, exceptOwner)) {
      throw slotUnavailable(
        o.subject.startsWith('staff:') ? 'The staff member is already booked at that time.' : 'The resource is already booked at that time.',
      );
    }
  }
  return {
    kind: 'appointment',
    service,
    startsAt: isoTime(start),
    endsAt: isoTime(end),
    segments,
    staffMemberId: staffId,
    resourceId,
    classSessionId: null,
    stay: null,
    totalInCents: service.price_in_cents,
    currency: service.currency,
    occupancy,
  };
}

function planSeat(ctx: AppContext, account: Account, sessionId: string): Plan {
  const session = refField('class_session_id', () => classSessionRow(ctx, account, sessionId));
  const service = serviceRow(ctx, account, session.service_id);
  if (session.cancelled_at) throw slotUnavailable('The class session is cancelled.');
  if (Date.parse(session.starts_at) <= ctx.clock.now()) throw slotUnavailable('The class session has already started.');
  if (bookingsStoreOf(ctx).seatsTaken(session.id) >= session.capacity) throw slotUnavailable('The class session is full.', { seats_left: 0 });
  return {
    kind: 'class_seat',
    service,
    startsAt: session.starts_at,
    endsAt: session.ends_at,
    segments: [],
    staffMemberId: session.staff_member_id,
    resourceId: session.resource_id,
    classSessionId: session.id,
    stay: null,
    totalInCents: service.price_in_cents,
    currency: service.currency,
    occupancy: [],
  };
}

function planStay(ctx: AppContext, account: Account, s: NonNullable<Target['stay']>, exceptOwner: string): Plan {
  const service = refField('stay.room_type_id', () => serviceRow(ctx, account, s.room_type_id));
  if (service.kind !== 'lodging') throw invalid({ 'stay.room_type_id': `service ${service.id} is a ${service.kind}, not a room type` });
  if (!service.active) throw invalid({ 'stay.room_type_id': 'the room type is not active' });
  const inMs = Date.parse(`${s.check_in_on}T00:00:00Z`);
  const outMs = Date.parse(`${s.check_out_on}T00:00:00Z`);
  const nights = Math.round((outMs - inMs) / DAY);
  if (nights < 1) throw invalid({ 'stay.check_out_on': 'must be after check_in_on' });
  if (nights > 365) throw invalid({ 'stay.check_out_on': 'a stay is at most 365 nights' });
  const today = isoTime(ctx.clock.now()).slice(0, 10);
  if (s.check_in_on < today) throw invalid({ 'stay.check_in_on': 'must not be in the past' });
  if (service.max_guests !== null && s.guests > service.max_guests) throw invalid({ 'stay.guests': `at most ${service.max_guests} guests in this room type` });

  let candidates = unitsOfRoomType(ctx, service.id);
  if (s.unit_id) {
    const unit = refField('stay.unit_id', () => resourceRow(ctx, account, s.unit_id!));
    if (unit.room_type_id !== service.id) throw invalid({ 'stay.unit_id': 'the unit is not of this room type' });
    if (!unit.active) throw invalid({ 'stay.unit_id': 'the unit is not active' });
    candidates = [unit];
  }
  const unit = candidates.find(
    (u) =>
      free(ctx, { subject: `night:${u.id}`, startsAt: s.check_in_on, endsAt: s.check_out_on }, exceptOwner) &&
      !feedsBlockNights(ctx, u.id, s.check_in_on, s.check_out_on),
  );
  if (!unit) throw slotUnavailable(s.unit_id ? 'The unit is taken on some of those nights.' : 'No unit of this room type is free on those nights.');
  const startsAt = isoTime(inMs);
  const endsAt = isoTime(outMs);
  const stay: Stay = {
    room_type_id: service.id,
    unit_id: unit.id,
    unit_name: unit.name,
    check_in_on: s.check_in_on,
    check_out_on: s.check_out_on,
    nights,
    guests: s.guests,
    service_tab_id: null,
    registered_guests: [],
    guests_registered_at: null,
  };
  return {
    kind: 'stay',
    service,
    startsAt,
    endsAt,
    segments: [
      {
        service_id: service.id,
        product_id: service.product_id,
        product_variant_id: null,
        staff_member_id: null,
        resource_id: unit.id,
        kind: 'stay',
        starts_at: startsAt,
        ends_at: endsAt,
      },
    ],
    staffMemberId: null,
    resourceId: unit.id,
    classSessionId: null,
    stay,
    totalInCents: nights * service.price_in_cents,
    currency: service.currency,
    occupancy: [{ subject: `night:${unit.id}`, startsAt: s.check_in_on, endsAt: s.check_out_on }],
  };
}
