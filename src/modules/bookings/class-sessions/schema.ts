import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../../api/pagination.js';
import { Nullable } from '../../../api/schemas.js';

const Id = Type.String({ minLength: 1, maxLength: 64 });

export const ClassSessionCreateBody = Type.Object({
  service_id: Id,
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  staff_member_id: Type.Optional(Nullable(Id)),
  resource_id: Type.Optional(Nullable(Id)),
  starts_at: Type.String({ format: 'date-time' }),
  /** Defaults to the class's duration. */
  ends_at: Type.Optional(Type.String({ format: 'date-time' })),
  /** Defaults to the class's capacity. */
  capacity: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
});
export type ClassSessionCreate = Static<typeof ClassSessionCreateBody>;

export const ClassSessionSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  service_id: Type.String(),
  name: Type.String(),
  staff_member_id: Nullable(Type.String()),
  resource_id: Nullable(Type.String()),
  starts_at: Type.String(),
  ends_at: Type.String(),
  capacity: Type.Integer(),
  seats_taken: Type.Integer(),
  seats_left: Type.Integer(),
  seat_booking_ids: Type.Array(Type.String()),
  cancelled_at: Nullable(Type.String()),
  live_mode: Type.Boolean(),
  created_at: Type.String(),
});
export type ClassSessionView = Static<typeof ClassSessionSchema>;

export const ClassSessionListQuery = Type.Object({
  service_id: Type.Optional(Type.String()),
  staff_member_id: Type.Optional(Type.String()),
  from: Type.Optional(Type.String({ format: 'date-time' })),
  to: Type.Optional(Type.String({ format: 'date-time' })),
  cancelled: Type.Optional(Type.Boolean()),
  page: PageQuery.page,
  items: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
});
