import { timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { ApiError } from '../../errors.js';
import { bookingsStoreOf } from './deps.js';
import { applyEvent } from './lifecycle.js';
import { holdsSlot } from './machine.js';
import type { BookingRow } from './store.js';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The customer's page of a booking (`access_url`): what was booked, its state, and the link to pay
 * what the policy asks. The secret token in the URL is the only credential, as with a checkout link.
 */
export function bookingPageRoutes(app: ApiApp, ctx: AppContext): void {
  const byToken = (id: string, token: string): BookingRow | undefined => {
    const row = bookingsStoreOf(ctx).get(id);
    const a = Buffer.from(row?.access_token ?? '');
    const b = Buffer.from(token);
    return row && a.length === b.length && timingSafeEqual(a, b) ? row : undefined;
  };
  const windowMs = () => ctx.config.scheduling.customer_cancellation_hours * 3_600_000;

  // The customer cancels from their page, up to `customer_cancellation_hours` before the start
  // (spec 3.1: the window binds customers only). Like the business's cancellation, nothing is refunded.
  app.post(
    '/booking_pages/:id/:token/cancellation',
    { schema: { hide: true, params: Type.Object({ id: Type.String({ maxLength: 64 }), token: Type.String({ maxLength: 64 }) }) } },
    async (req, reply) => {
      const row = byToken(req.params.id, req.params.token);
      if (!row) return reply.code(404).send({ message: 'No such booking.' });
      if (!holdsSlot(row.status)) throw new ApiError('not_holding');
      if (Date.parse(row.starts_at) - ctx.clock.now() < windowMs()) {
        throw new ApiError('booking_state_invalid', {
          message: `Bookings can be cancelled here up to ${ctx.config.scheduling.customer_cancellation_hours} hours before they start; call the business.`,
        });
      }
      tx(ctx.db, () =>
        applyEvent(ctx, bookingsStoreOf(ctx).get(row.id)!, 'CANCEL', {
          cancelled_by: 'customer',
          cancellation_reason: 'cancelled_by_customer',
          hold_expires_at: null,
        }),
      );
      return reply.redirect(`/booking_pages/${row.id}/${req.params.token}`, 303);
    },
  );

  app.get(
    '/booking_pages/:id/:token',
    { schema: { hide: true, params: Type.Object({ id: Type.String({ maxLength: 64 }), token: Type.String({ maxLength: 64 }) }) } },
    async (req, reply) => {
      const row = byToken(req.params.id, req.params.token);
      if (!row) return reply.code(404).send({ message: 'No such booking.' });
      const when = row.kind === 'stay' ? `${row.starts_at.slice(0, 10)} to ${row.ends_at.slice(0, 10)}` : `${row.starts_at} to ${row.ends_at}`;
      const pay =
        row.status === 'pending' && row.checkout_url
          ? `<p><a href="${esc(row.checkout_url)}">Pay ${(row.due_in_cents / 100).toFixed(2)} ${esc(row.currency)}</a>${row.hold_expires_at ? ` before ${esc(row.hold_expires_at)}` : ''}</p>`
          : row.balance_checkout_url && row.balance_in_cents > 0
            ? `<p><a href="${esc(row.balance_checkout_url)}">Pay the balance of ${(row.balance_in_cents / 100).toFixed(2)} ${esc(row.currency)}</a></p>`
            : '';
      const cancel =
        holdsSlot(row.status) && Date.parse(row.starts_at) - ctx.clock.now() >= windowMs()
          ? `<form method="post" action="/booking_pages/${esc(row.id)}/${esc(req.params.token)}/cancellation"><button>Cancel this booking</button></form>`
          : '';
      const html = `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>Booking</title></head>
<body><h1>Booking ${esc(row.id)}</h1><p>Status: <strong>${esc(row.status)}</strong></p><p>${esc(when)}</p>
<p>Total ${(row.total_in_cents / 100).toFixed(2)} ${esc(row.currency)}, paid ${(row.paid_in_cents / 100).toFixed(2)}, balance ${(row.balance_in_cents / 100).toFixed(2)}</p>${pay}${cancel}</body></html>`;
      return reply.header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store').send(html);
    },
  );
}
