import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import { createFeed, feedsOfResource, feedView } from './service.js';
import { IdParams, Nullable, ErrorResponses } from '../../api/schemas.js';

const FeedSchema = Type.Object({
  id: Type.String(),
  resource_id: Type.String(),
  label: Type.String(),
  url: Type.String(),
  last_synced_at: Nullable(Type.String()),
  last_error: Nullable(Type.String()),
  created_at: Type.String(),
});
const FeedBody = Type.Object({ label: Type.String({ minLength: 1, maxLength: 200 }), url: Type.String({ minLength: 1, maxLength: 2000 }) });

export function feedRoutes(app: ApiApp, ctx: AppContext): void {
  const tags = ['scheduling'];
  app.post(
    '/resources/:id/ical_feeds',
    { schema: { tags, params: IdParams, body: FeedBody, response: { 201: FeedSchema, ...ErrorResponses } } },
    async (req, reply) => reply.code(201).send(feedView(await createFeed(ctx, requireAccount(req), req.params.id, req.body))),
  );
  app.get('/resources/:id/ical_feeds', { schema: { tags, params: IdParams, response: { 200: Type.Array(FeedSchema), ...ErrorResponses } } }, async (req) =>
    feedsOfResource(ctx, requireAccount(req), req.params.id).map(feedView),
  );
}
