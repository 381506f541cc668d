import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope } from '../../api/auth.js';
import { notFound } from '../../errors.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { intentDocument } from './document.js';
import { IntentDocumentSchema } from './schema.js';

export function intentRoutes(app: ApiApp, ctx: AppContext): void {
  app.get(
    '/intents/:id',
    { schema: { tags: ['intents'], params: IdParams, response: { 200: IntentDocumentSchema, ...ErrorResponses } } },
    async (req) => {
      const { accountIds, liveMode } = readScope(req);
      const doc = intentDocument(ctx, req.params.id);
      if (!doc || !accountIds.includes(doc.account_id) || doc.live_mode !== liveMode) throw notFound('intent', req.params.id);
      return doc;
    },
  );
}
