import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { ApiError } from '../../errors.js';
import { contractDelivery } from './delivery.js';
import { ContractSchema, CreateContractBody, CreateTemplateBody, TemplateSchema } from './schema.js';
import { ContractsService, contractView, templateView } from './service.js';
import { IdParams, errorBodies } from '../../api/schemas.js';

const errors = errorBodies(400, 401, 403, 404, 409, 422, 429);

function baseUrl(ctx: AppContext, req: FastifyRequest): string {
  return ctx.config.http.public_url
    ? ctx.config.http.public_url.replace(/\/$/, '')
    : `${req.protocol}://${req.headers.host ?? `${ctx.config.http.host}:${ctx.config.http.port}`}`;
}

export function contractRoutes(app: ApiApp, ctx: AppContext): void {
  const svc = new ContractsService(ctx);

  app.post(
    '/contract_templates',
    { schema: { tags: ['contracts'], body: CreateTemplateBody, response: { 201: TemplateSchema, ...errors } } },
    async (req, reply) => reply.code(201).send(templateView(svc.createTemplate(requireAccount(req), req.body))),
  );

  app.get(
    '/contract_templates',
    { schema: { tags: ['contracts'], querystring: Type.Object(PageQuery), response: { 200: Type.Array(TemplateSchema), ...errors } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const scope = readScope(req);
      const { rows, total } = svc.store.templates(scope.accountIds, scope.liveMode, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows.map(templateView);
    },
  );

  app.get('/contract_templates/:id', { schema: { tags: ['contracts'], params: IdParams, response: { 200: TemplateSchema, ...errors } } }, async (req) => {
    const scope = readScope(req);
    return templateView(svc.template(scope.accountIds, scope.liveMode, req.params.id));
  });

  app.post('/contracts', { schema: { tags: ['contracts'], body: CreateContractBody, response: { 201: ContractSchema, ...errors } } }, async (req, reply) => {
    const row = svc.create(requireAccount(req), req.body, baseUrl(ctx, req));
    // Spec 4.8: the link goes out by messaging and e-mail; a delivery problem never undoes the contract.
    void deliverLink(ctx, row.id).catch((err) => ctx.log.warn({ err, contract: row.id }, 'sending the signing link failed'));
    return reply.code(201).send(contractView(ctx, row));
  });

  app.get(
    '/contracts',
    { schema: { tags: ['contracts'], querystring: Type.Object(PageQuery), response: { 200: Type.Array(ContractSchema), ...errors } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const scope = readScope(req);
      const { rows, total } = svc.store.list(scope.accountIds, scope.liveMode, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows.map((r) => contractView(ctx, r));
    },
  );

  app.get('/contracts/:id', { schema: { tags: ['contracts'], params: IdParams, response: { 200: ContractSchema, ...errors } } }, async (req) => {
    const scope = readScope(req);
    return contractView(ctx, svc.find(scope.accountIds, scope.liveMode, req.params.id));
  });

  app.get(
    '/contracts/:id/pdf',
    { schema: { tags: ['contracts'], params: IdParams, response: { 200: Type.String({ description: 'application/pdf' }), ...errors } } },
    async (req, reply) => {
      const scope = readScope(req);
      const row = svc.find(scope.accountIds, scope.liveMode, req.params.id);
      if (!row.pdf_file) throw new ApiError('pdf_not_available', { extra: { status: row.status } });
      return reply
        .type('application/pdf')
        .header('content-disposition', `attachment; filename="${row.id}.pdf"`)
        .send(createReadStream(join(svc.pdfDir(), row.pdf_file)) as unknown as string);
    },
  );
}

/** Sends the signing link over every channel the customer can be reached on (or a reminder). */
export async function deliverLink(ctx: AppContext, contractId: string, reminder = false): Promise<void> {
  const row = new ContractsService(ctx).store.get(contractId);
  if (!row) return;
  const c = JSON.parse(row.customer) as { name: string | null; email: string | null; phone: string | null };
  const d = contractDelivery(ctx);
  const subject = reminder ? `Recordatorio: ${row.title} espera su firma` : `${row.title}: por favor lea y firme`;
  const text = `Hola${c.name ? ` ${c.name}` : ''}, lea y firme aquí: ${row.signing_url}`;
  const sends: Promise<void>[] = [];
  if (c.email && d.emailEnabled()) sends.push(d.email({ to: c.email, subject, text }));
  if (c.phone && d.messagingEnabled()) sends.push(d.message({ to: c.phone, subject, text }));
  const results = await Promise.allSettled(sends);
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}
