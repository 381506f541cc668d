import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope } from '../../api/auth.js';
import { pageOf, setPageHeaders } from '../../api/pagination.js';
import { ActivityQuery, ActivitySchema } from './schema.js';
import { listActivities } from './service.js';
import { errorBodies } from '../../api/schemas.js';

const errors = errorBodies(400, 401, 403, 404, 429);

export function activityRoutes(app: ApiApp, ctx: AppContext): void {
  app.get(
    '/activities',
    { schema: { tags: ['ledger'], querystring: ActivityQuery, response: { 200: Type.Array(ActivitySchema), ...errors } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const scope = { ...readScope(req), aggregate: req.auth.account === null };
      const { rows, total } = listActivities(ctx, scope, req.query, page);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );
}
