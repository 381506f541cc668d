import type { Db } from '../../db/database.js';

export interface ServiceRow {
  id: string;
  account_id: string;
  live_mode: number;
  kind: 'appointment' | 'class' | 'lodging';
  name: string;
  description: string | null;
  duration_minutes: number;
  processing_minutes: number;
  final_minutes: number;
  price_in_cents: number;
  currency: string;
  product_id: string | null;
  payment_policy: 'none' | 'card_on_file' | 'deposit' | 'full';
  deposit_in_cents: number | null;
  protection_in_cents: number | null;
  hold_minutes: number | null;
  capacity: number | null;
  max_guests: number | null;
  active: number;
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface StaffRow {
  id: string;
  account_id: string;
  live_mode: number;
  name: string;
  email: string | null;
  phone: string | null;
  service_ids: string;
  active: number;
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface ResourceRow {
  id: string;
  account_id: string;
  live_mode: number;
  name: string;
  kind: 'room' | 'chair' | 'equipment' | 'lodging_unit';
  room_type_id: string | null;
  active: number;
  calendar_token: string;
  metadata: string;
  created_at: string;
  updated_at: string;
}

export type Table = 'sched_services' | 'sched_staff_members' | 'sched_resources';

export interface ListFilter {
  accountIds: string[];
  liveMode: boolean;
  active?: boolean;
  kind?: string;
  roomTypeId?: string;
}

function insertSql(table: Table, columns: string[]): string {
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`;
}

const SERVICE_COLUMNS = [
  'id',
  'account_id',
  'live_mode',
  'kind',
  'name',
  'description',
  'duration_minutes',
  'processing_minutes',
  'final_minutes',
  'price_in_cents',
  'currency',
  'product_id',
  'payment_policy',
  'deposit_in_cents',
  'protection_in_cents',
  'hold_minutes',
  'capacity',
  'max_guests',
  'active',
  'metadata',
  'created_at',
  'updated_at',
];
const STAFF_COLUMNS = ['id', 'account_id', 'live_mode', 'name', 'email', 'phone', 'service_ids', 'active', 'metadata', 'created_at', 'updated_at'];
const RESOURCE_COLUMNS = ['id', 'account_id', 'live_mode', 'name', 'kind', 'room_type_id', 'active', 'calendar_token', 'metadata', 'created_at', 'updated_at'];

/** All SQL of services, staff members and resources. */
export function bookablesStore(db: Db) {
  const stmts = {
    insertService: db.prepare(insertSql('sched_services', SERVICE_COLUMNS)),
    insertStaff: db.prepare(insertSql('sched_staff_members', STAFF_COLUMNS)),
    insertResource: db.prepare(insertSql('sched_resources', RESOURCE_COLUMNS)),
    updateService: db.prepare(
      `UPDATE sched_services SET ${SERVICE_COLUMNS.filter((c) => !['id', 'account_id', 'live_mode', 'kind', 'created_at'].includes(c))
        .map((c) => `${c} = @${c}`)
        .join(', ')} WHERE id = @id`,
    ),
    updateStaff: db.prepare(
      `UPDATE sched_staff_members SET ${STAFF_COLUMNS.filter((c) => !['id', 'account_id', 'live_mode', 'created_at'].includes(c))
        .map((c) => `${c} = @${c}`)
        .join(', ')} WHERE id = @id`,
    ),
    updateResource: db.prepare(
      `UPDATE sched_resources SET ${RESOURCE_COLUMNS.filter((c) => !['id', 'account_id', 'live_mode', 'created_at', 'calendar_token'].includes(c))
        .map((c) => `${c} = @${c}`)
        .join(', ')} WHERE id = @id`,
    ),
    service: db.prepare('SELECT * FROM sched_services WHERE id = ?'),
    staff: db.prepare('SELECT * FROM sched_staff_members WHERE id = ?'),
    resource: db.prepare('SELECT * FROM sched_resources WHERE id = ?'),
    unitsOfRoomType: db.prepare("SELECT * FROM sched_resources WHERE room_type_id = ? AND active = 1 AND kind = 'lodging_unit' ORDER BY created_at, rowid"),
  };

  function list<T>(table: Table, f: ListFilter, limit: number, offset: number): { rows: T[]; total: number } {
    const where = [`account_id IN (${f.accountIds.map(() => '?').join(', ') || 'NULL'})`, 'live_mode = ?'];
    const args: unknown[] = [...f.accountIds, f.liveMode ? 1 : 0];
    if (f.active !== undefined) {
      where.push('active = ?');
      args.push(f.active ? 1 : 0);
    }
    if (f.kind !== undefined) {
      where.push('kind = ?');
      args.push(f.kind);
    }
    if (f.roomTypeId !== undefined) {
      where.push('room_type_id = ?');
      args.push(f.roomTypeId);
    }
    const clause = where.join(' AND ');
    // Filters vary per call; the statement cache of better-sqlite3 keeps these cheap enough for lists.
    const rows = db.prepare(`SELECT * FROM ${table} WHERE ${clause} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`).all(...args, limit, offset) as T[];
    const total = (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${clause}`).get(...args) as { n: number }).n;
    return { rows, total };
  }

  return {
    insertService: (row: ServiceRow) => stmts.insertService.run(row),
    insertStaff: (row: StaffRow) => stmts.insertStaff.run(row),
    insertResource: (row: ResourceRow) => stmts.insertResource.run(row),
    updateService: (row: ServiceRow) => stmts.updateService.run(row),
    updateStaff: (row: StaffRow) => stmts.updateStaff.run(row),
    updateResource: (row: ResourceRow) => stmts.updateResource.run(row),
    service: (id: string) => stmts.service.get(id) as ServiceRow | undefined,
    staff: (id: string) => stmts.staff.get(id) as StaffRow | undefined,
    resource: (id: string) => stmts.resource.get(id) as ResourceRow | undefined,
    unitsOfRoomType: (roomTypeId: string) => stmts.unitsOfRoomType.all(roomTypeId) as ResourceRow[],
    list,
  };
}
export type BookablesStore = ReturnType<typeof bookablesStore>;
