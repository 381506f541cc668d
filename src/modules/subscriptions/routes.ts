import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { ApiError } from '../../errors.js';
import { hostedSubscriptionFields, subscriptionDetail } from './document.js';
import { customerById } from '../customers/service.js';
import { getProduct } from '../products/service.js';
import { updateSubscription } from './changes.js';
import {
  AdvanceBody,
  CANCEL_MESSAGE,
  CancelAnswerSchema,
  CreateTrialSubscriptionBody,
  StatusFilterSchema,
  SubscriptionSchema,
  UpdateSubscriptionBody,
} from './schema.js';
import { SubscriptionsService } from './service.js';
import { storedStatus } from './machine.js';
import { IdParams, errorBodies } from '../../api/schemas.js';
import { oneTimePaymentRoutes } from './one-time-payments.js';

const errors = errorBodies(400, 401, 403, 404, 422, 429);

export function subscriptionRoutes(app: ApiApp, ctx: AppContext): void {
  const subs = new SubscriptionsService(ctx);
  oneTimePaymentRoutes(app, ctx);
  const tags = ['subscriptions'];
  const view = (r: Parameters<typeof subscriptionDetail>[1]) => {
    const customer = r.customer_id ? customerById(ctx, r.customer_id) : undefined;
    const product = getProduct(ctx, { id: r.account_id, live_mode: r.live_mode === 1 }, r.product_id);
    return { ...subscriptionDetail(subs.store, r), ...hostedSubscriptionFields(r, customer, product?.name ?? null) };
  };

  app.get(
    '/subscriptions',
    {
      schema: {
        tags,
        querystring: Type.Object({ ...PageQuery, status: Type.Optional(StatusFilterSchema) }),
        response: { 200: Type.Array(SubscriptionSchema), ...errors },
      },
    },
    async (req, reply) => {
      const page = pageOf(req.query);
      const scope = readScope(req);
      const { rows, total } = subs.store.list(
        scope.accountIds,
        scope.liveMode,
        req.query.status ? storedStatus(req.query.status as Parameters<typeof storedStatus>[0]) : null,
        page.limit,
        page.offset,
      );
      setPageHeaders(req, reply, page, total);
      return rows.map(view);
    },
  );

  /** Spec 6.2 setup_intent.succeeded: a trial starts with the card kept and no charge. */
  app.post('/subscriptions', { schema: { tags, body: CreateTrialSubscriptionBody, response: { 201: SubscriptionSchema, ...errors } } }, async (req, reply) => {
    const row = subs.startTrial(requireAccount(req), req.body);
    reply.code(201);
    return view(row);
  });

  app.get('/subscriptions/:id', { schema: { tags, params: IdParams, response: { 200: SubscriptionSchema, ...errors } } }, async (req) => {
    const scope = readScope(req);
    return view(subs.find(scope.accountIds, scope.liveMode, req.params.id));
  });

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/subscriptions/:id',
      schema: { tags, params: IdParams, body: UpdateSubscriptionBody, response: { 200: SubscriptionSchema, ...errors } },
      handler: async (req) => {
        return view(updateSubscription(ctx, subs, requireAccount(req), req.params.id, req.body));
      },
    });
  }

  /**
   * The hosted service answers `{message: "Suscripción cancelada"}`; posd answers that `message`
   * beside the subscription itself, so a client reading either finds what it reads.
   */
  app.delete('/subscriptions/:id', { schema: { tags, params: IdParams, response: { 200: CancelAnswerSchema, ...errors } } }, async (req) => ({
    message: CANCEL_MESSAGE,
    ...view(subs.cancel(requireAccount(req), req.params.id)),
  }));

  /** gaps.md sandbox helper: bill the next period now, optionally failing. */
  app.post(
    '/test_helpers/subscriptions/:id/advance',
    { schema: { tags: ['test helpers'], params: IdParams, body: AdvanceBody, response: { 200: SubscriptionSchema, ...errors } } },
    async (req) => {
      const account = requireAccount(req);
      // Live keys must not learn that the helper exists: the same 404 as an unknown route.
      if (account.live_mode) throw new ApiError('route_not_found', { message: `No such endpoint: POST ${req.url.split('?')[0]}` });
      return view(subs.advance(account, req.params.id, req.body.outcome ?? 'succeeded', req.body.failure_reason));
    },
  );
}
