import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../api/pagination.js';
import { Nullable } from '../../api/schemas.js';

export const Currency = Type.Union([Type.Literal('GTQ'), Type.Literal('USD')]);
export const PaymentPolicy = Type.Union([Type.Literal('none'), Type.Literal('card_on_file'), Type.Literal('deposit'), Type.Literal('full')]);
export const ServiceKind = Type.Union([Type.Literal('appointment'), Type.Literal('class'), Type.Literal('lodging')]);
export const ResourceKind = Type.Union([Type.Literal('room'), Type.Literal('chair'), Type.Literal('equipment'), Type.Literal('lodging_unit')]);
export const Metadata = Type.Record(Type.String(), Type.Unknown());
const Cents = Type.Integer({ minimum: 0, maximum: 100_000_000 });
const Minutes = Type.Integer({ minimum: 0, maximum: 24 * 60 });
const Name = Type.String({ minLength: 1, maxLength: 200 });

const serviceFields = {
  name: Name,
  description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  duration_minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 * 60 })),
  processing_minutes: Type.Optional(Minutes),
  final_minutes: Type.Optional(Minutes),
  price_in_cents: Cents,
  currency: Type.Optional(Currency),
  product_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64 }))),
  payment_policy: Type.Optional(PaymentPolicy),
  deposit_in_cents: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000_000 }))),
  protection_in_cents: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000_000 }))),
  hold_minutes: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 7 * 24 * 60 }))),
  capacity: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 10_000 }))),
  max_guests: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100 }))),
  active: Type.Optional(Type.Boolean()),
  metadata: Type.Optional(Metadata),
};

export const ServiceCreateBody = Type.Object({ kind: ServiceKind, ...serviceFields });
export type ServiceCreate = Static<typeof ServiceCreateBody>;
export const ServicePatchBody = Type.Partial(Type.Object(serviceFields));
export type ServicePatch = Static<typeof ServicePatchBody>;

export const ServiceSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  kind: ServiceKind,
  name: Type.String(),
  description: Nullable(Type.String()),
  duration_minutes: Type.Integer(),
  processing_minutes: Type.Integer(),
  final_minutes: Type.Integer(),
  price_in_cents: Type.Integer(),
  currency: Type.String(),
  product_id: Nullable(Type.String()),
  payment_policy: PaymentPolicy,
  deposit_in_cents: Nullable(Type.Integer()),
  protection_in_cents: Nullable(Type.Integer()),
  hold_minutes: Nullable(Type.Integer()),
  capacity: Nullable(Type.Integer()),
  max_guests: Nullable(Type.Integer()),
  active: Type.Boolean(),
  metadata: Metadata,
  live_mode: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type ServiceView = Static<typeof ServiceSchema>;

const staffFields = {
  name: Name,
  email: Type.Optional(Nullable(Type.String({ maxLength: 320 }))),
  phone: Type.Optional(Nullable(Type.String({ maxLength: 40 }))),
  service_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 200 })),
  active: Type.Optional(Type.Boolean()),
  metadata: Type.Optional(Metadata),
};
export const StaffCreateBody = Type.Object(staffFields);
export type StaffCreate = Static<typeof StaffCreateBody>;
export const StaffPatchBody = Type.Partial(Type.Object(staffFields));
export type StaffPatch = Static<typeof StaffPatchBody>;

export const StaffSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  name: Type.String(),
  email: Nullable(Type.String()),
  phone: Nullable(Type.String()),
  service_ids: Type.Array(Type.String()),
  active: Type.Boolean(),
  metadata: Metadata,
  live_mode: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type StaffView = Static<typeof StaffSchema>;

const resourceFields = {
  name: Name,
  kind: Type.Optional(ResourceKind),
  room_type_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64 }))),
  active: Type.Optional(Type.Boolean()),
  metadata: Type.Optional(Metadata),
};
export const ResourceCreateBody = Type.Object(resourceFields);
export type ResourceCreate = Static<typeof ResourceCreateBody>;
export const ResourcePatchBody = Type.Partial(Type.Object(resourceFields));
export type ResourcePatch = Static<typeof ResourcePatchBody>;

export const ResourceSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  name: Type.String(),
  kind: ResourceKind,
  room_type_id: Nullable(Type.String()),
  active: Type.Boolean(),
  /** Public, unauthenticated iCalendar export of the unit's busy nights (other platforms import it). */
  calendar_url: Type.String(),
  metadata: Metadata,
  live_mode: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type ResourceView = Static<typeof ResourceSchema>;

export const ActiveListQuery = Type.Object({
  page: PageQuery.page,
  items: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
  active: Type.Optional(Type.Boolean()),
});
export const ServiceListQuery = Type.Composite([ActiveListQuery, Type.Object({ kind: Type.Optional(ServiceKind) })]);
export const ResourceListQuery = Type.Composite([
  ActiveListQuery,
  Type.Object({ kind: Type.Optional(ResourceKind), room_type_id: Type.Optional(Type.String()) }),
]);
