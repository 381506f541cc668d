import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../../api/module.js';
import type { AppContext } from '../../../context.js';
import { readScope, requireAccount } from '../../../api/auth.js';
import { pageOf, setPageHeaders } from '../../../api/pagination.js';
import { ClassSessionCreateBody, ClassSessionListQuery, ClassSessionSchema } from './schema.js';
import { classSessionRow, classSessionView, createClassSession, listClassSessions } from './service.js';
import { cancelClassSession } from './cancel.js';
import { IdParams, ErrorResponses } from '../../../api/schemas.js';

export function classSessionRoutes(app: ApiApp, ctx: AppContext): void {
  const tags = ['scheduling'];
  app.post(
    '/class_sessions',
    { schema: { tags, body: ClassSessionCreateBody, response: { 201: ClassSessionSchema, ...ErrorResponses } } },
    async (req, reply) => reply.code(201).send(createClassSession(ctx, requireAccount(req), req.body)),
  );
  app.get(
    '/class_sessions',
    { schema: { tags, querystring: ClassSessionListQuery, response: { 200: Type.Array(ClassSessionSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const q = req.query;
      const { rows, total } = listClassSessions(
        ctx,
        {
          ...readScope(req),
          serviceId: q.service_id,
          staffMemberId: q.staff_member_id,
          from: q.from && new Date(q.from).toISOString(),
          to: q.to && new Date(q.to).toISOString(),
          cancelled: q.cancelled,
        },
        page.limit,
        page.offset,
      );
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );
  app.get('/class_sessions/:id', { schema: { tags, params: IdParams, response: { 200: ClassSessionSchema, ...ErrorResponses } } }, async (req) =>
    classSessionView(ctx, classSessionRow(ctx, requireAccount(req), req.params.id)),
  );
  app.post(
    '/class_sessions/:id/cancellation',
    { schema: { tags, params: IdParams, response: { 201: ClassSessionSchema, ...ErrorResponses } } },
    async (req, reply) => reply.code(201).send(await cancelClassSession(ctx, requireAccount(req), req.params.id)),
  );
}
