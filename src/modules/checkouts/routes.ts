import { Type } from '@sinclair/typebox';
import { sendCommitted } from '../../api/idempotency.js';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { pageOf, parseBound, setPageHeaders } from '../../api/pagination.js';
import { notFound } from '../../errors.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { CheckoutListQuery, CheckoutSchema, CreateCheckoutBody, UpdateCheckoutBody } from './schema.js';
import { createCheckout, getCheckoutIn, listCheckouts, updateCheckout } from './service.js';

export function checkoutRoutes(app: ApiApp, ctx: AppContext): void {
  app.post(
    '/checkouts',
    { schema: { tags: ['checkouts'], body: CreateCheckoutBody, response: { 201: CheckoutSchema, ...ErrorResponses } } },
    async (req, reply) => sendCommitted(ctx.db, req, reply, 201, () => createCheckout(ctx, requireAccount(req), req.body)),
  );

  app.get(
    '/checkouts',
    { schema: { tags: ['checkouts'], querystring: CheckoutListQuery, response: { 200: Type.Array(CheckoutSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const q = req.query;
      const page = pageOf(q);
      const { accountIds, liveMode } = readScope(req);
      const filter = {
        status: q.status,
        from: q.from_time ? parseBound(q.from_time, 'from_time', false) : undefined,
        until: q.until_time ? parseBound(q.until_time, 'until_time', true) : undefined,
      };
      const { rows, total } = listCheckouts(ctx, accountIds, liveMode, page.limit, page.offset, filter);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get(
    '/checkouts/:id',
    { schema: { tags: ['checkouts'], params: IdParams, response: { 200: CheckoutSchema, ...ErrorResponses } } },
    async (req) => {
      const { accountIds, liveMode } = readScope(req);
      const checkout = getCheckoutIn(ctx, accountIds, liveMode, req.params.id);
      if (!checkout) throw notFound('checkout', req.params.id);
      return checkout;
    },
  );

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/checkouts/:id',
      schema: { tags: ['checkouts'], params: IdParams, body: UpdateCheckoutBody, response: { 200: CheckoutSchema, ...ErrorResponses } },
      handler: async (req, reply) => sendCommitted(ctx.db, req, reply, 200, () => updateCheckout(ctx, requireAccount(req), req.params.id, req.body)),
    });
  }
}
