import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import { tx } from '../../db/database.js';
import { invalid, notFound } from '../../errors.js';
import { newId, randomToken } from '../../ids.js';
import { isoTime } from '../../clock.js';
import { publicBaseUrl } from '../../config.js';
import { appendFeedChange } from '../../outbox/feed-changes.js';
import { bookablesStore, type BookablesStore, type ResourceRow, type ServiceRow, type StaffRow, type ListFilter } from './store.js';
import type { ResourceCreate, ResourcePatch, ResourceView, ServiceCreate, ServicePatch, ServiceView, StaffCreate, StaffPatch, StaffView } from './schema.js';
import { perDb } from '../../db/per-db.js';

const stores = perDb(bookablesStore);
export function storeOf(ctx: AppContext): BookablesStore {
  return stores(ctx.db);
}

/** Where this daemon is reachable for links it hands out: the configured public URL, else the request's host. */
export function baseUrlOf(ctx: AppContext, req?: FastifyRequest): string {
  if (ctx.config.http.public_url) return publicBaseUrl(ctx.config);
  if (req?.headers.host) return `${req.protocol}://${req.headers.host}`;
  return publicBaseUrl(ctx.config);
}

/** A row is visible to an account only in its own environment; anything else is 404 alike. */
function owned<T extends { account_id: string; live_mode: number }>(row: T | undefined, account: Account, what: string, id: string): T {
  if (!row || row.account_id !== account.id || (row.live_mode === 1) !== account.live_mode) throw notFound(what, id);
  return row;
}

export function serviceView(r: ServiceRow): ServiceView {
  return {
    id: r.id,
    account_id: r.account_id,
    kind: r.kind,
    name: r.name,
    description: r.description,
    duration_minutes: r.duration_minutes,
    processing_minutes: r.processing_minutes,
    final_minutes: r.final_minutes,
    price_in_cents: r.price_in_cents,
    currency: r.currency,
    product_id: r.product_id,
    payment_policy: r.payment_policy,
    deposit_in_cents: r.deposit_in_cents,
    protection_in_cents: r.protection_in_cents,
    hold_minutes: r.hold_minutes,
    capacity: r.capacity,
    max_guests: r.max_guests,
    active: r.active === 1,
    metadata: JSON.parse(r.metadata),
    live_mode: r.live_mode === 1,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export function staffView(r: StaffRow): StaffView {
  return {
    id: r.id,
    account_id: r.account_id,
    name: r.name,
    email: r.email,
    phone: r.phone,
    service_ids: JSON.parse(r.service_ids),
    active: r.active === 1,
    metadata: JSON.parse(r.metadata),
    live_mode: r.live_mode === 1,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export function calendarUrl(base: string, r: ResourceRow): string {
  return `${base}/calendars/${r.id}/${r.calendar_token}.ics`;
}

export function resourceView(r: ResourceRow, base: string): ResourceView {
  return {
    id: r.id,
    account_id: r.account_id,
    name: r.name,
    kind: r.kind,
    room_type_id: r.room_type_id,
    active: r.active === 1,
    calendar_url: calendarUrl(base, r),
    metadata: JSON.parse(r.metadata),
    live_mode: r.live_mode === 1,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** Rules a service must keep after any create or patch; 400 naming each broken field. */
function checkService(r: ServiceRow): void {
  const errors: Record<string, string> = {};
  if (r.processing_minutes > 0 && r.final_minutes === 0) errors.final_minutes = 'must be at least 1 when the service has processing time';
  if (r.payment_policy === 'deposit' && r.deposit_in_cents === null) errors.deposit_in_cents = 'is required with payment_policy deposit';
  if (r.deposit_in_cents !== null && r.deposit_in_cents > r.price_in_cents) errors.deposit_in_cents = 'must not exceed price_in_cents';
  if (r.payment_policy === 'card_on_file' && r.protection_in_cents === null) errors.protection_in_cents = 'is required with payment_policy card_on_file';
  if (r.payment_policy !== 'none' && r.price_in_cents === 0 && r.payment_policy !== 'card_on_file')
    errors.payment_policy = 'a free service cannot ask for a payment';
  if (Object.keys(errors).length) throw invalid(errors);
}

export function createService(ctx: AppContext, account: Account, b: ServiceCreate): ServiceView {
  const now = isoTime(ctx.clock.now());
  const row: ServiceRow = {
    id: newId('svc'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    kind: b.kind,
    name: b.name,
    description: b.description ?? null,
    duration_minutes: b.duration_minutes ?? 60,
    processing_minutes: b.processing_minutes ?? 0,
    final_minutes: b.final_minutes ?? 0,
    price_in_cents: b.price_in_cents,
    currency: b.currency ?? account.default_currency,
    product_id: b.product_id ?? null,
    payment_policy: b.payment_policy ?? 'none',
    deposit_in_cents: b.deposit_in_cents ?? null,
    protection_in_cents: b.protection_in_cents ?? null,
    hold_minutes: b.hold_minutes ?? null,
    capacity: b.capacity ?? null,
    max_guests: b.max_guests ?? null,
    active: b.active === false ? 0 : 1,
    metadata: JSON.stringify(b.metadata ?? {}),
    created_at: now,
    updated_at: now,
  };
  checkService(row);
  tx(ctx.db, () => {
    storeOf(ctx).insertService(row);
    publishBookable(ctx, 'service', row);
  });
  return serviceView(row);
}

export function serviceRow(ctx: AppContext, account: Account, id: string): ServiceRow {
  return owned(storeOf(ctx).service(id), account, 'service', id);
}

export function updateService(ctx: AppContext, account: Account, id: string, p: ServicePatch): ServiceView {
  return tx(ctx.db, () => {
    const cur = serviceRow(ctx, account, id);
    const row: ServiceRow = { ...cur, updated_at: isoTime(ctx.clock.now()) };
    for (const [k, v] of Object.entries(p)) {
      if (v === undefined) continue;
      if (k === 'active') row.active = v ? 1 : 0;
      else if (k === 'metadata') row.metadata = JSON.stringify(v);
      else (row as unknown as Record<string, unknown>)[k] = v;
    }
    checkService(row);
    storeOf(ctx).updateService(row);
    publishBookable(ctx, 'service', row);
    return serviceView(row);
  });
}

function checkServiceIds(ctx: AppContext, account: Account, ids: string[] | undefined): void {
  if (!ids) return;
  const bad = ids.filter((id) => {
    const s = storeOf(ctx).service(id);
    return !s || s.account_id !== account.id || (s.live_mode === 1) !== account.live_mode;
  });
  if (bad.length) throw invalid({ service_ids: bad.map((id) => `no service with id ${id}`) });
}

export function createStaff(ctx: AppContext, account: Account, b: StaffCreate): StaffView {
  checkServiceIds(ctx, account, b.service_ids);
  const now = isoTime(ctx.clock.now());
  const row: StaffRow = {
    id: newId('stf'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    name: b.name,
    email: b.email ?? null,
    phone: b.phone ?? null,
    service_ids: JSON.stringify(b.service_ids ?? []),
    active: b.active === false ? 0 : 1,
    metadata: JSON.stringify(b.metadata ?? {}),
    created_at: now,
    updated_at: now,
  };
  tx(ctx.db, () => {
    storeOf(ctx).insertStaff(row);
    publishBookable(ctx, 'staff_member', row);
  });
  return staffView(row);
}

export function staffRow(ctx: AppContext, account: Account, id: string): StaffRow {
  return owned(storeOf(ctx).staff(id), account, 'staff member', id);
}

export function updateStaff(ctx: AppContext, account: Account, id: string, p: StaffPatch): StaffView {
  checkServiceIds(ctx, account, p.service_ids);
  return tx(ctx.db, () => {
    const cur = staffRow(ctx, account, id);
    const row: StaffRow = { ...cur, updated_at: isoTime(ctx.clock.now()) };
    if (p.name !== undefined) row.name = p.name;
    if (p.email !== undefined) row.email = p.email;
    if (p.phone !== undefined) row.phone = p.phone;
    if (p.service_ids !== undefined) row.service_ids = JSON.stringify(p.service_ids);
    if (p.active !== undefined) row.active = p.active ? 1 : 0;
    if (p.metadata !== undefined) row.metadata = JSON.stringify(p.metadata);
    storeOf(ctx).updateStaff(row);
    publishBookable(ctx, 'staff_member', row);
    return staffView(row);
  });
}

function checkResource(ctx: AppContext, account: Account, r: ResourceRow): void {
  if (r.kind === 'lodging_unit') {
    if (!r.room_type_id) throw invalid({ room_type_id: 'is required for a lodging_unit' });
    const rt = storeOf(ctx).service(r.room_type_id);
    if (!rt || rt.account_id !== account.id || (rt.live_mode === 1) !== account.live_mode || rt.kind !== 'lodging') {
      throw invalid({ room_type_id: `no lodging service with id ${r.room_type_id}` });
    }
  } else if (r.room_type_id) {
    throw invalid({ room_type_id: 'only a lodging_unit has a room type' });
  }
}

export function createResource(ctx: AppContext, account: Account, b: ResourceCreate, base: string): ResourceView {
  const now = isoTime(ctx.clock.now());
  const kind = b.kind ?? (b.room_type_id ? 'lodging_unit' : 'room');
  const row: ResourceRow = {
    id: newId('res'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    name: b.name,
    kind,
    room_type_id: b.room_type_id ?? null,
    active: b.active === false ? 0 : 1,
    calendar_token: randomToken(32),
    metadata: JSON.stringify(b.metadata ?? {}),
    created_at: now,
    updated_at: now,
  };
  checkResource(ctx, account, row);
  tx(ctx.db, () => {
    storeOf(ctx).insertResource(row);
    publishBookable(ctx, 'resource', row);
  });
  return resourceView(row, base);
}

export function resourceRow(ctx: AppContext, account: Account, id: string): ResourceRow {
  return owned(storeOf(ctx).resource(id), account, 'resource', id);
}

export function updateResource(ctx: AppContext, account: Account, id: string, p: ResourcePatch, base: string): ResourceView {
  return tx(ctx.db, () => {
    const cur = resourceRow(ctx, account, id);
    const row: ResourceRow = { ...cur, updated_at: isoTime(ctx.clock.now()) };
    if (p.name !== undefined) row.name = p.name;
    if (p.kind !== undefined) row.kind = p.kind;
    if (p.room_type_id !== undefined) row.room_type_id = p.room_type_id;
    if (p.active !== undefined) row.active = p.active ? 1 : 0;
    if (p.metadata !== undefined) row.metadata = JSON.stringify(p.metadata);
    checkResource(ctx, account, row);
    storeOf(ctx).updateResource(row);
    publishBookable(ctx, 'resource', row);
    return resourceView(row, base);
  });
}

export function listBookables<T>(
  ctx: AppContext,
  table: 'sched_services' | 'sched_staff_members' | 'sched_resources',
  f: ListFilter,
  limit: number,
  offset: number,
) {
  return storeOf(ctx).list<T>(table, f, limit, offset);
}

/** Active lodging units of a room type, in a stable order (the first free one gets an unassigned stay). */
export function unitsOfRoomType(ctx: AppContext, roomTypeId: string): ResourceRow[] {
  return storeOf(ctx).unitsOfRoomType(roomTypeId);
}

/** The resource behind a public calendar URL, or undefined when the token does not match. */
export function resourceByCalendarToken(ctx: AppContext, id: string, token: string): ResourceRow | undefined {
  const row = storeOf(ctx).resource(id);
  if (!row) return undefined;
  const a = Buffer.from(row.calendar_token);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b) ? row : undefined;
}

export interface BookableRows {
  services: ServiceRow[];
  staff_members: StaffRow[];
  resources: ResourceRow[];
}

/**
 * The rows a booking names (its service, staff member, resources and their room types), carried in
 * its sync record so a central that never saw them (made at the store) can hold the booking.
 */
export function bookableRows(ctx: AppContext, ids: { services: string[]; staff: string[]; resources: string[] }): BookableRows {
  const s = storeOf(ctx);
  const resources = [...new Set(ids.resources)].map((id) => s.resource(id)).filter((r): r is ResourceRow => r !== undefined);
  const serviceIds = new Set([...ids.services, ...resources.map((r) => r.room_type_id).filter((id): id is string => id !== null)]);
  return {
    services: [...serviceIds].map((id) => s.service(id)).filter((r): r is ServiceRow => r !== undefined),
    staff_members: [...new Set(ids.staff)].map((id) => s.staff(id)).filter((r): r is StaffRow => r !== undefined),
    resources,
  };
}

/** Writes bookables made elsewhere with their ids, each only when absent: a central keeps its own version. In the caller's transaction. */
export function ensureBookables(ctx: AppContext, rows: BookableRows): void {
  const s = storeOf(ctx);
  for (const r of rows.services) if (!s.service(r.id)) s.insertService(r);
  for (const r of rows.staff_members) if (!s.staff(r.id)) s.insertStaff(r);
  for (const r of rows.resources) if (!s.resource(r.id)) s.insertResource(r);
}

export type BookableType = 'service' | 'staff_member' | 'resource';
type BookableRow = ServiceRow | StaffRow | ResourceRow;

/**
 * Services, staff members and resources are managed at the central: one made or changed there
 * reaches the account's boxes (feed kind `bookable`, the whole row), so the counter books them and
 * sees the central's bookings of them. A no-op at a store.
 */
function publishBookable(ctx: AppContext, type: BookableType, row: BookableRow): void {
  appendFeedChange(ctx.db, {
    kind: 'bookable',
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    objectId: row.id,
    payload: { type, row },
    createdAt: row.updated_at,
  });
}

/** A bookable learnt from the central's feed: inserted, or set to the central's state unless this box's is newer. */
export function applyCentralBookable(ctx: AppContext, type: BookableType, row: BookableRow): void {
  const store = storeOf(ctx);
  if (type === 'service') {
    const cur = store.service(row.id);
    if (!cur) store.insertService(row as ServiceRow);
    else if (row.updated_at >= cur.updated_at) store.updateService(row as ServiceRow);
  } else if (type === 'staff_member') {
    const cur = store.staff(row.id);
    if (!cur) store.insertStaff(row as StaffRow);
    else if (row.updated_at >= cur.updated_at) store.updateStaff(row as StaffRow);
  } else {
    const cur = store.resource(row.id);
    if (!cur) store.insertResource(row as ResourceRow);
    else if (row.updated_at >= cur.updated_at) store.updateResource(row as ResourceRow);
  }
}

export type { ServiceRow } from './store.js';
