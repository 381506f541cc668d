import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { CouponSchema, CouponStatus, CreateCouponBody, UpdateCouponBody } from './schema.js';
import { CouponsService } from './service.js';
import { IdParams, errorBodies } from '../../api/schemas.js';
import { sendCommitted } from '../../api/idempotency.js';

const errors = errorBodies(400, 401, 403, 404, 422, 429);

export function couponRoutes(app: ApiApp, ctx: AppContext): void {
  const coupons = new CouponsService(ctx);
  const tags = ['coupons'];

  // Spec 4.10: the account's active coupons, `page` and `items` (default 10); `status` widens it.
  app.get(
    '/coupons',
    {
      schema: {
        tags,
        querystring: Type.Object({ ...PageQuery, status: Type.Optional(CouponStatus) }),
        response: { 200: Type.Array(CouponSchema), ...errors },
      },
    },
    async (req, reply) => {
      const page = pageOf(req.query);
      const scope = readScope(req);
      const { rows, total } = coupons.list({ ...scope, status: req.query.status ?? 'active', limit: page.limit, offset: page.offset });
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get('/coupons/:id', { schema: { tags, params: IdParams, response: { 200: CouponSchema, ...errors } } }, async (req) => {
    const scope = readScope(req);
    return coupons.get(scope.accountIds, scope.liveMode, req.params.id);
  });

  app.post('/coupons', { schema: { tags, body: CreateCouponBody, response: { 201: CouponSchema, ...errors } } }, async (req, reply) =>
    reply.code(201).send(coupons.create(requireAccount(req), req.body)),
  );

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/coupons/:id',
      schema: { tags, params: IdParams, body: UpdateCouponBody, response: { 200: CouponSchema, ...errors } },
      handler: async (req) => coupons.update(requireAccount(req), req.params.id, req.body),
    });
  }

  // The route the hosted clients call (issue 14; the hosted reference documents no body for it). The
  // coupon is archived, not erased: checkouts that applied it and its redemptions keep naming it, and
  // its code is free again. Answers the coupon with `status: archived`; archiving twice is the same.
  app.delete('/coupons/:id', { schema: { tags, params: IdParams, response: { 200: CouponSchema, ...errors } } }, async (req, reply) =>
    sendCommitted(ctx.db, req, reply, 200, () => coupons.update(requireAccount(req), req.params.id, { status: 'archived' })),
  );
}
