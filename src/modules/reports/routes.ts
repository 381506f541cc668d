import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { tx } from '../../db/database.js';
import { ApiError } from '../../errors.js';
import { CreateReportRunBody, ReportRunSchema } from './schema.js';
import { ReportsService, reportView, reportWaker, reportsDir } from './service.js';
import { IdParams, errorBodies } from '../../api/schemas.js';

const errors = errorBodies(400, 401, 403, 404, 409, 429);

function baseUrl(ctx: AppContext, req: FastifyRequest): string {
  return ctx.config.http.public_url
    ? ctx.config.http.public_url.replace(/\/$/, '')
    : `${req.protocol}://${req.headers.host ?? `${ctx.config.http.host}:${ctx.config.http.port}`}`;
}

export function reportRoutes(app: ApiApp, ctx: AppContext): void {
  const reports = new ReportsService(ctx);
  const tags = ['reports'];

  app.post('/report_runs', { schema: { tags, body: CreateReportRunBody, response: { 201: ReportRunSchema, ...errors } } }, async (req, reply) =>
    reply.code(201).send(reportView(reports.create(requireAccount(req), req.body), baseUrl(ctx, req))),
  );

  app.get(
    '/report_runs',
    { schema: { tags, querystring: Type.Object(PageQuery), response: { 200: Type.Array(ReportRunSchema), ...errors } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const scope = readScope(req);
      const { rows, total } = reports.store.list(scope.accountIds, scope.liveMode, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows.map((r) => reportView(r, baseUrl(ctx, req)));
    },
  );

  app.get('/report_runs/:id', { schema: { tags, params: IdParams, response: { 200: ReportRunSchema, ...errors } } }, async (req) => {
    const scope = readScope(req);
    return reportView(reports.get(scope.accountIds, scope.liveMode, req.params.id), baseUrl(ctx, req));
  });

  app.get(
    '/report_runs/:id/download',
    { schema: { tags, params: IdParams, response: { 200: Type.String({ description: 'The CSV file' }), ...errors } } },
    async (req, reply) => {
      const scope = readScope(req);
      const run = reports.get(scope.accountIds, scope.liveMode, req.params.id);
      const notReady = () =>
        new ApiError('report_not_ready', { message: `The report is ${run.status}; download it once it has succeeded.`, extra: { status: run.status } });
      if (run.status !== 'succeeded') throw notReady();
      const file = join(reportsDir(ctx), run.file_name!);
      const st = await stat(file).catch(() => undefined);
      if (!st || st.size !== run.size_bytes) {
        // The file vanished or was damaged outside posd: generate it again rather than serve it.
        tx(ctx.db, () => reports.store.requeue(run.id));
        setImmediate(() => reportWaker(ctx).emit('wake'));
        throw new ApiError('report_not_ready', { message: 'The report file is being generated again.', extra: { status: 'pending' } });
      }
      // The file is complete and never rewritten in place (renamed into position), so streaming it is safe.
      return (
        reply
          .type('text/csv; charset=utf-8')
          .header('content-length', String(st.size))
          .header('content-disposition', `attachment; filename="${run.file_name}"`)
          .header('x-content-sha256', run.sha256!)
          // A stream skips the serializer; the schema's string documents the body for OpenAPI.
          .send(createReadStream(file) as unknown as string)
      );
    },
  );
}
