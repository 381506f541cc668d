import type { Statement } from 'better-sqlite3';
import type { Db } from '../../db/database.js';
import type { BookingStatus } from './machine.js';
import { listCount, statementCache } from '../../db/list-counts.js';

export interface BookingRow {
  id: string;
  account_id: string;
  live_mode: number;
  status: BookingStatus;
  source: string;
  kind: 'appointment' | 'class_seat' | 'stay';
  service_id: string;
  requires_acceptance: number;
  starts_at: string;
  ends_at: string;
  customer_id: string;
  customer_name: string | null;
  customer_email: string | null;
  customer_phone: string | null;
  segments: string;
  staff_member_id: string | null;
  resource_id: string | null;
  class_session_id: string | null;
  stay: string | null;
  payment_policy: 'none' | 'card_on_file' | 'deposit' | 'full';
  currency: string;
  total_in_cents: number;
  due_in_cents: number;
  paid_in_cents: number;
  balance_in_cents: number;
  balance_paid_outside_at: string | null;
  checkout_id: string | null;
  checkout_url: string | null;
  balance_checkout_id: string | null;
  balance_checkout_url: string | null;
  no_show_fee_checkout_id: string | null;
  booking_series_id: string | null;
  access_token: string;
  customer_note: string | null;
  merchant_note: string | null;
  accepted_at: string | null;
  hold_expires_at: string | null;
  cancelled_by: 'customer' | 'merchant' | 'system' | null;
  cancellation_reason: string | null;
  rescheduled_from_id: string | null;
  payment_intent_ids: string;
  refund_due: number;
  refund_reason: 'declined' | 'class_session_cancelled' | 'late_payment' | null;
  refunded_at: string | null;
  refund_ids: string;
  refunded_intent_ids: string;
  refund_error: string | null;
  metadata: string;
  created_at: string;
  updated_at: string;
  /** At a central: the store box that made this booking and runs its lifecycle (sync); null elsewhere. */
  origin_store_id: string | null;
}

const COLUMNS: Array<keyof BookingRow> = [
  'id',
  'account_id',
  'live_mode',
  'status',
  'source',
  'kind',
  'service_id',
  'requires_acceptance',
  'starts_at',
  'ends_at',
  'customer_id',
  'customer_name',
  'customer_email',
  'customer_phone',
  'segments',
  'staff_member_id',
  'resource_id',
  'class_session_id',
  'stay',
  'payment_policy',
  'currency',
  'total_in_cents',
  'due_in_cents',
  'paid_in_cents',
  'balance_in_cents',
  'balance_paid_outside_at',
  'checkout_id',
  'checkout_url',
  'balance_checkout_id',
  'balance_checkout_url',
  'no_show_fee_checkout_id',
  'booking_series_id',
  'access_token',
  'customer_note',
  'merchant_note',
  'accepted_at',
  'hold_expires_at',
  'cancelled_by',
  'cancellation_reason',
  'rescheduled_from_id',
  'payment_intent_ids',
  'refund_due',
  'refund_reason',
  'refunded_at',
  'refund_ids',
  'refunded_intent_ids',
  'refund_error',
  'metadata',
  'created_at',
  'updated_at',
  'origin_store_id',
];
const FIXED = new Set(['id', 'account_id', 'live_mode', 'created_at', 'origin_store_id']);
// A central leaves the timers of a store's bookings (holds, payment polling, late refunds) to that store.
const OWN = 'origin_store_id IS NULL';

export interface OccupancyInput {
  ownerId: string;
  accountId: string;
  liveMode: boolean;
  subject: string;
  startsAt: string;
  endsAt: string;
}

export interface BookingFilter {
  accountIds: string[];
  liveMode: boolean;
  status?: string;
  from?: string;
  to?: string;
  staffMemberId?: string;
  resourceId?: string;
  customerId?: string;
  classSessionId?: string;
  bookingSeriesId?: string;
  kind?: string;
  q?: string;
}

export interface SeriesRow {
  id: string;
  account_id: string;
  live_mode: number;
  frequency: 'daily' | 'weekly';
  interval: number;
  count: number;
  created_at: string;
}

export interface TabRow {
  id: string;
  account_id: string;
  live_mode: number;
  booking_id: string;
  status: 'open' | 'closed';
  items: string;
  checkout_id: string | null;
  checkout_url: string | null;
  created_at: string;
  closed_at: string | null;
}

/** All SQL of bookings, their occupancy, series and service tabs. */
export function bookingsStore(db: Db) {
  const cached = statementCache(db);
  const s = {
    insert: db.prepare(`INSERT INTO sched_bookings (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')})`),
    update: db.prepare(
      `UPDATE sched_bookings SET ${COLUMNS.filter((c) => !FIXED.has(c))
        .map((c) => `${c} = @${c}`)
        .join(', ')} WHERE id = @id`,
    ),
    get: db.prepare('SELECT * FROM sched_bookings WHERE id = ?'),
    // Walks (subject, ends_at) from the new slot's start: only rows ending after it are read, the
    // subject's future from there, never its whole past (sched_occupancy_subject_end).
    conflict: db.prepare(
      `SELECT owner_id FROM sched_occupancy INDEXED BY sched_occupancy_subject_end
        WHERE subject = ? AND ends_at > ? AND starts_at < ? AND owner_id <> ? LIMIT 1`,
    ),
    occupy: db.prepare('INSERT INTO sched_occupancy (owner_id, account_id, live_mode, subject, starts_at, ends_at) VALUES (?, ?, ?, ?, ?, ?)'),
    release: db.prepare('DELETE FROM sched_occupancy WHERE owner_id = ?'),
    occupancyOf: db.prepare('SELECT subject, starts_at, ends_at FROM sched_occupancy WHERE owner_id = ? ORDER BY subject, starts_at'),
    nightsOf: db.prepare(`SELECT o.owner_id, o.starts_at, o.ends_at FROM sched_occupancy o WHERE o.subject = ? AND o.ends_at > ? ORDER BY o.starts_at`),
    seatsTaken: db.prepare(
      "SELECT count(*) AS n FROM sched_bookings WHERE class_session_id = ? AND status IN ('pending', 'confirmed', 'checked_in', 'completed', 'no_show')",
    ),
    seatIds: db.prepare(
      "SELECT id FROM sched_bookings WHERE class_session_id = ? AND status IN ('pending', 'confirmed', 'checked_in', 'completed', 'no_show') ORDER BY created_at, id",
    ),
    sessionSeats: db.prepare('SELECT * FROM sched_bookings WHERE class_session_id = ? ORDER BY created_at, id'),
    refundsDue: db.prepare(
      "SELECT * FROM sched_bookings WHERE class_session_id = ? AND refund_due = 1 AND refund_reason = 'class_session_cancelled' ORDER BY created_at, id",
    ),
    awaitingPayment: db.prepare(`SELECT * FROM sched_bookings WHERE status = 'pending' AND checkout_id IS NOT NULL AND ${OWN} ORDER BY updated_at LIMIT ?`),
    // A booking cancelled while its checkout was open: the checkout stays payable until it expires
    // (at most the longest hold, 7 days), so its payment is still watched for that long.
    cancelledWithOpenCheckout: db.prepare(
      `SELECT * FROM sched_bookings WHERE status = 'cancelled' AND checkout_id IS NOT NULL AND paid_in_cents < due_in_cents
         AND refund_due = 0 AND created_at >= ? AND ${OWN} ORDER BY updated_at LIMIT ?`,
    ),
    latePaymentsToRefund: db.prepare(`SELECT * FROM sched_bookings WHERE refund_due = 1 AND refund_reason = 'late_payment' AND ${OWN} LIMIT ?`),
    insertSeries: db.prepare(
      'INSERT INTO sched_booking_series (id, account_id, live_mode, frequency, interval, count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    insertTab: db.prepare(
      `INSERT INTO sched_service_tabs (id, account_id, live_mode, booking_id, status, items, checkout_id, checkout_url, created_at, closed_at)
       VALUES (@id, @account_id, @live_mode, @booking_id, @status, @items, @checkout_id, @checkout_url, @created_at, @closed_at)`,
    ),
    updateTab: db.prepare(
      'UPDATE sched_service_tabs SET status = @status, items = @items, checkout_id = @checkout_id, checkout_url = @checkout_url, closed_at = @closed_at WHERE id = @id',
    ),
    tab: db.prepare('SELECT * FROM sched_service_tabs WHERE id = ?'),
    series: db.prepare('SELECT * FROM sched_booking_series WHERE id = ?'),
    insertSeriesRow: db.prepare(
      `INSERT INTO sched_booking_series (id, account_id, live_mode, frequency, interval, count, created_at)
       VALUES (@id, @account_id, @live_mode, @frequency, @interval, @count, @created_at) ON CONFLICT(id) DO NOTHING`,
    ),
  };

  // Runs before every booking. Its limit is written into the SQL, one statement per limit used: with
  // a bound `LIMIT ?` SQLite prepared the statement again on every run (28 µs a call instead of 3 µs
  // for this 51-column row; docs/scheduling.md, "Measured").
  const expiredHolds = new Map<number, Statement>();
  function expiredHoldsLimited(limit: number): Statement {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`expiredHolds: limit ${limit} is not a positive integer`);
    let stmt = expiredHolds.get(limit);
    if (!stmt) {
      stmt = db.prepare(
        `SELECT * FROM sched_bookings WHERE status = 'pending' AND hold_expires_at IS NOT NULL AND hold_expires_at <= ? AND ${OWN} LIMIT ${limit}`,
      );
      expiredHolds.set(limit, stmt);
    }
    return stmt;
  }

  function where(f: BookingFilter): { clause: string; args: unknown[] } {
    const w = [`account_id IN (${f.accountIds.map(() => '?').join(', ') || 'NULL'})`, 'live_mode = ?'];
    const args: unknown[] = [...f.accountIds, f.liveMode ? 1 : 0];
    const eq = (col: string, v: string | undefined) => {
      if (v !== undefined) {
        w.push(`${col} = ?`);
        args.push(v);
      }
    };
    eq('status', f.status);
    eq('staff_member_id', f.staffMemberId);
    eq('resource_id', f.resourceId);
    eq('customer_id', f.customerId);
    eq('class_session_id', f.classSessionId);
    eq('booking_series_id', f.bookingSeriesId);
    eq('kind', f.kind);
    if (f.from !== undefined) {
      w.push('starts_at >= ?');
      args.push(f.from);
    }
    if (f.to !== undefined) {
      w.push('starts_at <= ?');
      args.push(f.to);
    }
    if (f.q !== undefined && f.q.trim() !== '') {
      const like = `%${f.q
        .trim()
        .toLowerCase()
        .replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      w.push(
        "(lower(coalesce(customer_name, '')) LIKE ? ESCAPE '\\' OR lower(coalesce(customer_email, '')) LIKE ? ESCAPE '\\' OR coalesce(customer_phone, '') LIKE ? ESCAPE '\\')",
      );
      args.push(like, like, like);
    }
    return { clause: w.join(' AND '), args };
  }

  return {
    insert: (row: BookingRow) => s.insert.run(row),
    update: (row: BookingRow) => s.update.run(row),
    get: (id: string) => s.get.get(id) as BookingRow | undefined,
    /** The first owner already holding `subject` somewhere in [from, to), ignoring `exceptOwner`. */
    conflict: (subject: string, from: string, to: string, exceptOwner = '') =>
      (s.conflict.get(subject, from, to, exceptOwner) as { owner_id: string } | undefined)?.owner_id,
    occupy: (o: OccupancyInput) => s.occupy.run(o.ownerId, o.accountId, o.liveMode ? 1 : 0, o.subject, o.startsAt, o.endsAt),
    release: (ownerId: string) => s.release.run(ownerId).changes,
    occupancyOf: (ownerId: string) => s.occupancyOf.all(ownerId) as Array<{ subject: string; starts_at: string; ends_at: string }>,
    nightsOf: (resourceId: string, fromOn: string) =>
      s.nightsOf.all(`night:${resourceId}`, fromOn) as Array<{ owner_id: string; starts_at: string; ends_at: string }>,
    seatsTaken: (sessionId: string) => (s.seatsTaken.get(sessionId) as { n: number }).n,
    seatIds: (sessionId: string) => (s.seatIds.all(sessionId) as Array<{ id: string }>).map((r) => r.id),
    sessionSeats: (sessionId: string) => s.sessionSeats.all(sessionId) as BookingRow[],
    refundsDue: (sessionId: string) => s.refundsDue.all(sessionId) as BookingRow[],
    expiredHolds: (now: string, limit: number) => expiredHoldsLimited(limit).all(now) as BookingRow[],
    awaitingPayment: (limit: number) => s.awaitingPayment.all(limit) as BookingRow[],
    cancelledWithOpenCheckout: (since: string, limit: number) => s.cancelledWithOpenCheckout.all(since, limit) as BookingRow[],
    latePaymentsToRefund: (limit: number) => s.latePaymentsToRefund.all(limit) as BookingRow[],
    insertSeries: (id: string, accountId: string, liveMode: boolean, frequency: string, interval: number, count: number, at: string) =>
      s.insertSeries.run(id, accountId, liveMode ? 1 : 0, frequency, interval, count, at),
    insertTab: (row: TabRow) => s.insertTab.run(row),
    updateTab: (row: TabRow) => s.updateTab.run(row),
    tab: (id: string) => s.tab.get(id) as TabRow | undefined,
    series: (id: string) => s.series.get(id) as SeriesRow | undefined,
    /** A series made elsewhere (a store's, at its central), written once with its id. */
    insertSeriesRow: (row: SeriesRow) => s.insertSeriesRow.run(row),
    list(f: BookingFilter, limit: number, offset: number): { rows: BookingRow[]; total: number } {
      const { clause, args } = where(f);
      const rows = cached(`SELECT * FROM sched_bookings WHERE ${clause} ORDER BY starts_at, created_at, id LIMIT ? OFFSET ?`).all(
        ...args,
        limit,
        offset,
      ) as BookingRow[];
      // No filter, or a status only: the counters (decision 0270); any other filter counts its range.
      const { accountIds, liveMode, status, ...others } = f;
      const total = Object.values(others).every((v) => v === undefined)
        ? listCount(db, 'bookings', accountIds, liveMode, status ?? '')
        : (cached(`SELECT count(*) AS n FROM sched_bookings WHERE ${clause}`).get(...args) as { n: number }).n;
      return { rows, total };
    },
  };
}
export type BookingsStore = ReturnType<typeof bookingsStore>;
