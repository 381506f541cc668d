import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope } from '../../api/auth.js';
import { notFound } from '../../errors.js';
import { pageOf, PageQuery, parseBound, setPageHeaders } from '../../api/pagination.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { intentDocument } from './document.js';
import { IntentDocumentSchema } from './schema.js';
import { intentsStore } from './store.js';

/**
 * `GET /intents`: the hosted reference documents only `GET /intents/{id}`; clients that list them
 * get the same documents, newest first, paged as every hosted list (docs/compatibility.md).
 */
const IntentListQuery = Type.Object({
  ...PageQuery,
  from_time: Type.Optional(Type.String()),
  until_time: Type.Optional(Type.String()),
  status: Type.Optional(Type.Union(['pending', 'succeeded', 'failed', 'canceled', 'paid'].map((v) => Type.Literal(v)))),
  type: Type.Optional(Type.Union(['payment', 'bank_transfer', 'crypto', 'balance', 'cash'].map((v) => Type.Literal(v)))),
});

export function intentRoutes(app: ApiApp, ctx: AppContext): void {
  app.get(
    '/intents',
    { schema: { tags: ['intents'], querystring: IntentListQuery, response: { 200: Type.Array(IntentDocumentSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const q = req.query;
      const page = pageOf(q);
      const { accountIds, liveMode } = readScope(req);
      const filter = {
        from: q.from_time ? parseBound(q.from_time, 'from_time', false) : undefined,
        until: q.until_time ? parseBound(q.until_time, 'until_time', true) : undefined,
        status: q.status,
        type: q.type,
      };
      const { ids, total } = intentsStore(ctx.db).list(accountIds, liveMode, filter, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return ids.flatMap((id) => {
        const doc = intentDocument(ctx, id);
        return doc ? [doc] : [];
      });
    },
  );

  app.get('/intents/:id', { schema: { tags: ['intents'], params: IdParams, response: { 200: IntentDocumentSchema, ...ErrorResponses } } }, async (req) => {
    const { accountIds, liveMode } = readScope(req);
    const doc = intentDocument(ctx, req.params.id);
    if (!doc || !accountIds.includes(doc.account_id) || doc.live_mode !== liveMode) throw notFound('intent', req.params.id);
    return doc;
  });
}
