import type { AppContext } from '../../context.js';
import { publicBaseUrl } from '../../config.js';
import { bookableRows, type BookableRows } from '../bookables/service.js';
import { findClassSession } from './class-sessions/service.js';
import type { ClassSessionRow } from './class-sessions/store.js';
import { bookingsStoreOf } from './deps.js';
import type { BookingView } from './schema.js';
import type { BookingRow, SeriesRow } from './store.js';
import { bookingView } from './views.js';

/** What the booking names that a central may not hold (made at the store): written there when absent. */
export interface BookingRefs extends BookableRows {
  class_session: ClassSessionRow | null;
  series: SeriesRow | null;
}

/**
 * The `booking` sync record of every booking write: the view (what the API answers), the whole row
 * (what the central writes, same ids and times), what it occupies, and the rows it names.
 */
export interface BookingRecord {
  op: string;
  booking: BookingView;
  row: BookingRow;
  occupancy: Array<{ subject: string; starts_at: string; ends_at: string }>;
  refs: BookingRefs;
}

/** The record of one booking write at this box (see `recordSync`). */
export function bookingRecord(ctx: AppContext, row: BookingRow, op: string): BookingRecord {
  const store = bookingsStoreOf(ctx);
  const session = row.class_session_id ? (findClassSession(ctx, row.class_session_id) ?? null) : null;
  const segments: Array<{ service_id: string; staff_member_id: string | null; resource_id: string | null }> = JSON.parse(row.segments);
  const rows = bookableRows(ctx, {
    services: [row.service_id, ...(session ? [session.service_id] : [])],
    staff: [row.staff_member_id, session?.staff_member_id ?? null, ...segments.map((s) => s.staff_member_id)].filter((x): x is string => !!x),
    resources: [row.resource_id, session?.resource_id ?? null, ...segments.map((s) => s.resource_id)].filter((x): x is string => !!x),
  });
  return {
    op,
    booking: bookingView(row, publicBaseUrl(ctx.config)),
    row,
    occupancy: store.occupancyOf(row.id),
    refs: { ...rows, class_session: session, series: row.booking_series_id ? (store.series(row.booking_series_id) ?? null) : null },
  };
}
