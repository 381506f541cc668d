import type { AppContext } from '../../context.js';
import type { FastifyRequest } from 'fastify';
import { baseUrlOf } from '../bookables/service.js';
import type { BookingRow } from './store.js';
import type { BookingView, Segment, Stay } from './schema.js';

export function segmentsOf(row: BookingRow): Segment[] {
  return JSON.parse(row.segments);
}

export function stayOf(row: BookingRow): Stay | null {
  return row.stay ? JSON.parse(row.stay) : null;
}

export function accessUrl(base: string, row: BookingRow): string {
  return `${base}/booking_pages/${row.id}/${row.access_token}`;
}

export function bookingView(row: BookingRow, base: string): BookingView {
  return {
    id: row.id,
    account_id: row.account_id,
    status: row.status,
    source: row.source,
    kind: row.kind,
    starts_at: row.starts_at,
    ends_at: row.ends_at,
    customer: { id: row.customer_id, name: row.customer_name, email: row.customer_email, phone: row.customer_phone },
    segments: segmentsOf(row),
    staff_member_id: row.staff_member_id,
    resource_id: row.resource_id,
    class_session_id: row.class_session_id,
    stay: stayOf(row),
    payment_policy: row.payment_policy,
    currency: row.currency,
    total_in_cents: row.total_in_cents,
    paid_in_cents: row.paid_in_cents,
    balance_in_cents: row.balance_in_cents,
    balance_paid_outside_at: row.balance_paid_outside_at,
    checkout_id: row.checkout_id,
    checkout_url: row.checkout_url,
    balance_checkout_id: row.balance_checkout_id,
    balance_checkout_url: row.balance_checkout_url,
    no_show_fee_checkout_id: row.no_show_fee_checkout_id,
    booking_series_id: row.booking_series_id,
    access_url: accessUrl(base, row),
    customer_note: row.customer_note,
    merchant_note: row.merchant_note,
    accepted_at: row.accepted_at,
    hold_expires_at: row.hold_expires_at,
    cancelled_by: row.cancelled_by,
    cancellation_reason: row.cancellation_reason,
    rescheduled_from_id: row.rescheduled_from_id,
    refund_ids: JSON.parse(row.refund_ids),
    metadata: JSON.parse(row.metadata),
    live_mode: row.live_mode === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function viewFor(ctx: AppContext, req: FastifyRequest | undefined) {
  const base = baseUrlOf(ctx, req);
  return (row: BookingRow) => bookingView(row, base);
}
