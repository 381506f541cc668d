import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import { pageOf, setPageHeaders } from '../../api/pagination.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { accountsOf } from '../../accounts/service.js';
import {
  BookingCreateBody,
  BookingListQuery,
  BookingSchema,
  GuestsBody,
  RescheduleBody,
  SeriesCreateBody,
  SeriesSchema,
  TabItemBody,
  TabSchema,
} from './schema.js';
import {
  acceptBooking,
  addTabItem,
  bookingAccountId,
  bookingsEnabled,
  cancelBooking,
  chargeBalance,
  checkInBooking,
  closeTab,
  completeBooking,
  createBookingGrouped,
  createSeries,
  declineBooking,
  getBooking,
  listBookings,
  markBalancePaidOutside,
  noShowBooking,
  registerGuests,
  requireBookingsEnabled,
  rescheduleBooking,
  tabOf,
  tabView,
} from './service.js';
import { viewFor } from './views.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { commitIdempotentResponse } from '../../api/idempotency.js';

const iso = (s: string | undefined) => (s === undefined ? undefined : new Date(s).toISOString());

export function bookingRoutes(app: ApiApp, ctx: AppContext): void {
  const tags = ['bookings'];
  const accounts = accountsOf(ctx);
  const one = { params: IdParams, response: { 201: BookingSchema, ...ErrorResponses } };
  const enabledAccount = (req: FastifyRequest) => {
    const account = requireAccount(req);
    requireBookingsEnabled(account);
    return account;
  };

  app.post('/bookings', { schema: { tags, body: BookingCreateBody, response: { 201: BookingSchema, ...ErrorResponses } } }, async (req, reply) => {
    const view = viewFor(ctx, req);
    // The Idempotency-Key's answer commits with the booking, so a retry after a crash never books twice.
    const row = await createBookingGrouped(ctx, enabledAccount(req), req.body, (r) => commitIdempotentResponse(req, reply, 201, view(r)));
    return reply.code(201).send(view(row));
  });

  app.post('/booking_series', { schema: { tags, body: SeriesCreateBody, response: { 201: SeriesSchema, ...ErrorResponses } } }, async (req, reply) => {
    const s = createSeries(ctx, enabledAccount(req), req.body);
    const view = viewFor(ctx, req);
    return reply.code(201).send({ id: s.id, frequency: s.frequency, interval: s.interval, count: s.count, bookings: s.rows.map(view) });
  });

  app.get(
    '/bookings',
    { schema: { tags, querystring: BookingListQuery, response: { 200: Type.Array(BookingSchema), ...ErrorResponses } } },
    async (req, reply) => {
      // An organization key lists every account that takes bookings; one account must have them on.
      const enabled = req.auth.accountIds.filter((id) => {
        const a = accounts.account(id);
        return a !== undefined && bookingsEnabled(a);
      });
      if (enabled.length === 0) throw new ApiError('bookings_not_enabled');
      const q = req.query;
      const page = pageOf(q, 25, 'per_page');
      const { rows, total } = listBookings(
        ctx,
        {
          accountIds: enabled,
          liveMode: req.auth.liveMode,
          status: q.status,
          from: iso(q.from),
          to: iso(q.to),
          staffMemberId: q.staff_member_id,
          resourceId: q.resource_id,
          customerId: q.customer_id,
          classSessionId: q.class_session_id,
          bookingSeriesId: q.booking_series_id,
          kind: q.kind,
          q: q.q,
        },
        page.limit,
        page.offset,
      );
      setPageHeaders(req, reply, page, total, 'per_page');
      return rows.map(viewFor(ctx, req));
    },
  );

  // An organization key reads a booking of any of its accounts without naming it.
  app.get('/bookings/:id', { schema: { tags, params: IdParams, response: { 200: BookingSchema, ...ErrorResponses } } }, async (req) => {
    const owner = req.auth.account ?? accounts.account(bookingAccountId(ctx, req.params.id) ?? '');
    if (!owner || !req.auth.accountIds.includes(owner.id)) throw notFound('booking', req.params.id);
    requireBookingsEnabled(owner);
    return viewFor(ctx, req)(getBooking(ctx, owner, req.params.id));
  });

  // The body is optional (spec 4.5): a request without one carries no body at all, so it is checked here.
  app.post('/bookings/:id/cancellation', { schema: { tags, ...one } }, async (req, reply) => {
    const body = (req.body ?? {}) as { reason?: unknown };
    if (body.reason !== undefined && (typeof body.reason !== 'string' || body.reason.length > 500)) {
      throw invalid({ reason: 'must be a string of at most 500 characters' });
    }
    return reply.code(201).send(viewFor(ctx, req)(cancelBooking(ctx, enabledAccount(req), req.params.id, body.reason as string | undefined)));
  });
  app.post('/bookings/:id/declination', { schema: { tags, ...one } }, async (req, reply) =>
    reply.code(201).send(viewFor(ctx, req)(await declineBooking(ctx, enabledAccount(req), req.params.id))),
  );
  app.post('/bookings/:id/acceptance', { schema: { tags, ...one } }, async (req, reply) =>
    reply.code(201).send(viewFor(ctx, req)(acceptBooking(ctx, enabledAccount(req), req.params.id))),
  );
  app.post('/bookings/:id/check_in', { schema: { tags, ...one } }, async (req, reply) =>
    reply.code(201).send(viewFor(ctx, req)(checkInBooking(ctx, enabledAccount(req), req.params.id))),
  );
  app.post('/bookings/:id/completion', { schema: { tags, ...one } }, async (req, reply) =>
    reply.code(201).send(viewFor(ctx, req)(completeBooking(ctx, enabledAccount(req), req.params.id))),
  );
  app.post('/bookings/:id/no_show', { schema: { tags, ...one } }, async (req, reply) =>
    reply.code(201).send(viewFor(ctx, req)(noShowBooking(ctx, enabledAccount(req), req.params.id))),
  );
  app.post('/bookings/:id/balance_charge', { schema: { tags, ...one } }, async (req, reply) =>
    reply.code(201).send(viewFor(ctx, req)(chargeBalance(ctx, enabledAccount(req), req.params.id))),
  );
  app.post('/bookings/:id/balance_paid_outside', { schema: { tags, ...one } }, async (req, reply) =>
    reply.code(201).send(viewFor(ctx, req)(markBalancePaidOutside(ctx, enabledAccount(req), req.params.id))),
  );
  app.post('/bookings/:id/reschedule', { schema: { tags, ...one, body: RescheduleBody } }, async (req, reply) => {
    const account = enabledAccount(req);
    return reply.code(201).send(viewFor(ctx, req)(rescheduleBooking(ctx, account, getBooking(ctx, account, req.params.id), req.body)));
  });
  app.post('/bookings/:id/guests', { schema: { tags, ...one, body: GuestsBody } }, async (req, reply) =>
    reply.code(201).send(viewFor(ctx, req)(registerGuests(ctx, enabledAccount(req), req.params.id, req.body.guests))),
  );

  const tab = { params: IdParams, response: { 200: TabSchema, 201: TabSchema, ...ErrorResponses } };
  app.get('/service_tabs/:id', { schema: { tags, ...tab } }, async (req) => tabView(ctx, tabOf(ctx, enabledAccount(req), req.params.id)));
  app.post('/service_tabs/:id/items', { schema: { tags, ...tab, body: TabItemBody } }, async (req, reply) =>
    reply.code(201).send(tabView(ctx, addTabItem(ctx, enabledAccount(req), req.params.id, req.body))),
  );
  app.post('/service_tabs/:id/close', { schema: { tags, ...tab } }, async (req, reply) =>
    reply.code(201).send(tabView(ctx, closeTab(ctx, enabledAccount(req), req.params.id))),
  );
}
