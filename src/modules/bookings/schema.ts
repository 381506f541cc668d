import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../api/pagination.js';
import { Metadata, PaymentPolicy } from '../bookables/schema.js';
import { Nullable } from '../../api/schemas.js';

export const BookingStatus = Type.Union(['pending', 'confirmed', 'checked_in', 'completed', 'cancelled', 'no_show'].map((s) => Type.Literal(s)));
export const BookingKind = Type.Union([Type.Literal('appointment'), Type.Literal('class_seat'), Type.Literal('stay')]);
const DateTime = Type.String({ format: 'date-time' });
const DateOnly = Type.String({ format: 'date' });
const Id = Type.String({ minLength: 1, maxLength: 64 });

export const SegmentSchema = Type.Object({
  service_id: Type.String(),
  product_id: Nullable(Type.String()),
  product_variant_id: Nullable(Type.String()),
  staff_member_id: Nullable(Type.String()),
  resource_id: Nullable(Type.String()),
  kind: Type.Union([Type.Literal('service'), Type.Literal('processing_final'), Type.Literal('stay'), Type.Literal('class_session')]),
  starts_at: Type.String(),
  ends_at: Type.String(),
});
export type Segment = Static<typeof SegmentSchema>;

export const RegisteredGuestSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  document: Type.String({ minLength: 1, maxLength: 100 }),
  nationality: Type.String({ minLength: 1, maxLength: 100 }),
});

export const StaySchema = Type.Object({
  room_type_id: Type.String(),
  unit_id: Nullable(Type.String()),
  unit_name: Nullable(Type.String()),
  check_in_on: Type.String(),
  check_out_on: Type.String(),
  nights: Type.Integer(),
  guests: Type.Integer(),
  service_tab_id: Nullable(Type.String()),
  registered_guests: Type.Array(RegisteredGuestSchema),
  guests_registered_at: Nullable(Type.String()),
});
export type Stay = Static<typeof StaySchema>;

export const BookingSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  status: BookingStatus,
  source: Type.String(),
  kind: BookingKind,
  starts_at: Type.String(),
  ends_at: Type.String(),
  customer: Type.Object({ id: Type.String(), name: Nullable(Type.String()), email: Nullable(Type.String()), phone: Nullable(Type.String()) }),
  segments: Type.Array(SegmentSchema),
  staff_member_id: Nullable(Type.String()),
  resource_id: Nullable(Type.String()),
  class_session_id: Nullable(Type.String()),
  stay: Nullable(StaySchema),
  payment_policy: PaymentPolicy,
  currency: Type.String(),
  total_in_cents: Type.Integer(),
  paid_in_cents: Type.Integer(),
  balance_in_cents: Type.Integer(),
  balance_paid_outside_at: Nullable(Type.String()),
  checkout_id: Nullable(Type.String()),
  checkout_url: Nullable(Type.String()),
  balance_checkout_id: Nullable(Type.String()),
  balance_checkout_url: Nullable(Type.String()),
  no_show_fee_checkout_id: Nullable(Type.String()),
  booking_series_id: Nullable(Type.String()),
  access_url: Type.String(),
  customer_note: Nullable(Type.String()),
  merchant_note: Nullable(Type.String()),
  accepted_at: Nullable(Type.String()),
  hold_expires_at: Nullable(Type.String()),
  cancelled_by: Nullable(Type.Union([Type.Literal('customer'), Type.Literal('merchant'), Type.Literal('system')])),
  cancellation_reason: Nullable(Type.String()),
  rescheduled_from_id: Nullable(Type.String()),
  refund_ids: Type.Array(Type.String()),
  metadata: Metadata,
  live_mode: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type BookingView = Static<typeof BookingSchema>;

const CustomerInput = Type.Object({
  name: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  email: Type.Optional(Nullable(Type.String({ maxLength: 320 }))),
  phone: Type.Optional(Nullable(Type.String({ maxLength: 40 }))),
});

const StayInput = Type.Object({
  room_type_id: Id,
  unit_id: Type.Optional(Nullable(Id)),
  check_in_on: DateOnly,
  check_out_on: DateOnly,
  guests: Type.Integer({ minimum: 1, maximum: 100 }),
});

/** What is booked (one of an appointment, a class seat or a stay) and for whom. */
export const BookingTarget = {
  service_id: Type.Optional(Id),
  starts_at: Type.Optional(DateTime),
  staff_member_id: Type.Optional(Nullable(Id)),
  resource_id: Type.Optional(Nullable(Id)),
  class_session_id: Type.Optional(Id),
  stay: Type.Optional(StayInput),
};

export const BookingCreateBody = Type.Object({
  ...BookingTarget,
  customer_id: Type.Optional(Id),
  customer: Type.Optional(CustomerInput),
  payment_policy: Type.Optional(PaymentPolicy),
  /** The business decides before the slot is the customer's (pending until `/acceptance`). */
  requires_acceptance: Type.Optional(Type.Boolean()),
  customer_note: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  merchant_note: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  metadata: Type.Optional(Metadata),
});
export type BookingCreate = Static<typeof BookingCreateBody>;

export const SeriesCreateBody = Type.Composite([
  BookingCreateBody,
  Type.Object({
    repeat: Type.Object({
      frequency: Type.Union([Type.Literal('daily'), Type.Literal('weekly')]),
      interval: Type.Optional(Type.Integer({ minimum: 1, maximum: 12, default: 1 })),
      count: Type.Integer({ minimum: 2, maximum: 52 }),
    }),
  }),
]);
export type SeriesCreate = Static<typeof SeriesCreateBody>;
export const SeriesSchema = Type.Object({
  id: Type.String(),
  frequency: Type.String(),
  interval: Type.Integer(),
  count: Type.Integer(),
  bookings: Type.Array(BookingSchema),
});

export const RescheduleBody = Type.Object({
  starts_at: Type.Optional(DateTime),
  staff_member_id: Type.Optional(Nullable(Id)),
  resource_id: Type.Optional(Nullable(Id)),
  class_session_id: Type.Optional(Id),
  check_in_on: Type.Optional(DateOnly),
  check_out_on: Type.Optional(DateOnly),
  unit_id: Type.Optional(Nullable(Id)),
});
export type Reschedule = Static<typeof RescheduleBody>;

export const GuestsBody = Type.Object({ guests: Type.Array(RegisteredGuestSchema, { minItems: 1, maxItems: 100 }) });

export const BookingListQuery = Type.Object({
  status: Type.Optional(BookingStatus),
  from: Type.Optional(DateTime),
  to: Type.Optional(DateTime),
  // Bounded so the Link header that repeats them stays bounded too.
  staff_member_id: Type.Optional(Type.String({ maxLength: 64 })),
  resource_id: Type.Optional(Type.String({ maxLength: 64 })),
  customer_id: Type.Optional(Type.String({ maxLength: 64 })),
  class_session_id: Type.Optional(Type.String({ maxLength: 64 })),
  booking_series_id: Type.Optional(Type.String({ maxLength: 64 })),
  q: Type.Optional(Type.String({ maxLength: 200 })),
  kind: Type.Optional(BookingKind),
  page: PageQuery.page,
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
});

export const TabItemBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  amount_in_cents: Type.Integer({ minimum: 1, maximum: 100_000_000 }),
  quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 9, default: 1 })),
});
export const TabSchema = Type.Object({
  id: Type.String(),
  booking_id: Type.String(),
  status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
  items: Type.Array(Type.Object({ name: Type.String(), amount_in_cents: Type.Integer(), quantity: Type.Integer() })),
  total_in_cents: Type.Integer(),
  currency: Type.String(),
  checkout_id: Nullable(Type.String()),
  checkout_url: Nullable(Type.String()),
  created_at: Type.String(),
  closed_at: Nullable(Type.String()),
});
