import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { ApiApp } from '../../api/module.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { sealedResponses, type SecretBox } from '../../system/secret-box.js';
import { endpointView, type WebhooksService, type Scope } from './service.js';
import {
  CreateEndpointBody,
  CreatedEndpointSchema,
  DeletedEndpointSchema,
  DeliveryParams,
  DeliverySchema,
  EndpointParams,
  EndpointSchema,
  HistorySchema,
  ReplayBody,
  ReplayParams,
  ReplaySchema,
  RotateSecretBody,
  TestBody,
  UpdateEndpointBody,
  UpdatedEndpointSchema,
} from './schema.js';
import { errorBodies } from '../../api/schemas.js';
import type { AppContext } from '../../context.js';
import { eventTypeCatalogue, EventTypeSchema } from './event-types.js';

const errors = errorBodies(400, 401, 403, 404, 422, 429);
const tags = ['webhooks'];

function scopeOf(req: FastifyRequest): Scope {
  return { accountId: requireAccount(req).id, liveMode: req.auth.liveMode };
}

export function webhookRoutes(app: ApiApp, service: WebhooksService, box: SecretBox, ctx: AppContext): void {
  app.get(
    '/event_types',
    {
      schema: {
        tags,
        description: 'The event catalogue (docs/events.md): each type with its description and an example body per format. Svix: event types.',
        response: { 200: Type.Array(EventTypeSchema), ...errors },
      },
    },
    async (req) => {
      const scope = readScope(req);
      return eventTypeCatalogue(ctx, scope.accountIds[0] ?? '', scope.liveMode);
    },
  );

  app.post(
    '/webhook_endpoints',
    {
      schema: { tags, body: CreateEndpointBody, response: { 201: CreatedEndpointSchema, ...errors } },
      // The response holds the signing secret: its stored copy for Idempotency-Key replays is sealed.
      config: { idempotencyCodec: sealedResponses(box) },
    },
    async (req, reply) => {
      const created = await service.create(scopeOf(req), req.body);
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/webhook_endpoints',
    { schema: { tags, querystring: Type.Object(PageQuery), response: { 200: Type.Array(EndpointSchema), ...errors } } },
    async (req, reply) => {
      const scope = readScope(req);
      const page = pageOf(req.query);
      const { rows, total } = service.list(scope.accountIds, scope.liveMode, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get('/webhook_endpoints/:id', { schema: { tags, params: EndpointParams, response: { 200: EndpointSchema, ...errors } } }, async (req) => {
    const scope = readScope(req);
    return endpointView(service.find(scope.accountIds, scope.liveMode, req.params.id));
  });

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/webhook_endpoints/:id',
      schema: { tags, params: EndpointParams, body: UpdateEndpointBody, response: { 200: UpdatedEndpointSchema, ...errors } },
      handler: async (req) => service.update(scopeOf(req), req.params.id, req.body, req.auth.keyId),
    });
  }

  app.delete('/webhook_endpoints/:id', { schema: { tags, params: EndpointParams, response: { 200: DeletedEndpointSchema, ...errors } } }, async (req) => ({
    ...service.remove(scopeOf(req), req.params.id),
    deleted: true as const,
  }));

  app.get(
    '/webhook_endpoints/:id/deliveries',
    { schema: { tags, params: EndpointParams, querystring: Type.Object(PageQuery), response: { 200: Type.Array(DeliverySchema), ...errors } } },
    async (req, reply) => {
      const scope = readScope(req);
      const endpoint = service.find(scope.accountIds, scope.liveMode, req.params.id);
      const page = pageOf(req.query);
      const { rows, total } = service.deliveries(endpoint, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get(
    '/webhook_endpoints/:id/history',
    {
      schema: {
        tags,
        description: "The endpoint's audited changes (a URL moved), newest first.",
        params: EndpointParams,
        querystring: Type.Object(PageQuery),
        response: { 200: Type.Array(HistorySchema), ...errors },
      },
    },
    async (req, reply) => {
      const scope = readScope(req);
      const endpoint = service.find(scope.accountIds, scope.liveMode, req.params.id);
      const page = pageOf(req.query);
      const { rows, total } = service.historyOf(endpoint, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows.map((h) => ({ field: h.field, old_value: h.old_value, new_value: h.new_value, actor: h.actor, changed_at: h.changed_at }));
    },
  );

  app.post(
    '/webhook_endpoints/:id/deliveries/:delivery_id/retry',
    { schema: { tags, params: DeliveryParams, response: { 200: DeliverySchema, ...errors } } },
    async (req) => service.retry(scopeOf(req), req.params.id, req.params.delivery_id),
  );

  app.post(
    '/webhook_endpoints/:id/rotate_secret',
    {
      schema: {
        tags,
        description:
          'A new signing secret, returned only here. Until `previous_secret_expires_at` every delivery carries the signatures by both secrets in `webhook-signature` (Standard Webhooks; Svix: rotate secret).',
        params: EndpointParams,
        body: RotateSecretBody,
        response: { 200: CreatedEndpointSchema, ...errors },
      },
      // The answer holds the new secret: its stored copy for Idempotency-Key replays is sealed.
      config: { idempotencyCodec: { seal: (t: string) => box.seal(t), open: (t: string) => box.open(t) } },
    },
    async (req) => service.rotateSecret(scopeOf(req), req.params.id, req.body?.overlap_seconds),
  );

  app.post(
    '/webhook_endpoints/:id/replays',
    {
      schema: {
        tags,
        description:
          "Bulk replay: the events of the endpoint's deliveries that match (time range, event types, statuses) are sent again as new deliveries with the same webhook-id. Svix: recover; Stripe: resend.",
        params: EndpointParams,
        body: ReplayBody,
        response: { 201: ReplaySchema, ...errors },
      },
    },
    async (req, reply) => reply.code(201).send(await service.replay(scopeOf(req), req.params.id, req.body)),
  );

  app.get('/webhook_endpoints/:id/replays/:replay_id', { schema: { tags, params: ReplayParams, response: { 200: ReplaySchema, ...errors } } }, async (req) => {
    const scope = readScope(req);
    return service.replayStatus(scope.accountIds, scope.liveMode, req.params.id, req.params.replay_id);
  });

  app.post(
    '/webhook_endpoints/:id/test',
    { schema: { tags, params: EndpointParams, body: TestBody, response: { 200: DeliverySchema, ...errors } } },
    async (req) => service.sendTest(scopeOf(req), req.params.id, req.body.event_type),
  );
}
