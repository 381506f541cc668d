import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { contractDelivery } from './delivery.js';
import { ContractsService, SigningError, type CodeChannel } from './service.js';
import type { TemplateFieldT } from './schema.js';

const TokenParams = Type.Object({ token: Type.String({ minLength: 10, maxLength: 64 }) });
const Html = { 200: Type.String(), 400: Type.String(), 404: Type.String(), 409: Type.String() };
// Nothing in a template can run: no script, forms post only here.
const CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The customer-facing signing page at `signing_url` (outside /api: the link is the credential). */
export async function signingRoutes(app: ApiApp, ctx: AppContext): Promise<void> {
  await app.register(async (plugin) => {
    const page = plugin.withTypeProvider<TypeBoxTypeProvider>();
    const svc = new ContractsService(ctx);
    plugin.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });

    const html = (reply: FastifyReply, status: number, body: string) =>
      reply
        .code(status)
        .header('content-type', 'text/html; charset=utf-8')
        .header('content-security-policy', CSP)
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .send(body);

    // The signing page's markup is loaded by the first page view, not at start.
    const render = async (token: string, extra: { notice?: string; error?: string; sandboxCode?: string } = {}) => {
      const { signingPage } = await import('./page.js');
      const row = svc.store.byToken(token)!;
      const fields = JSON.parse(svc.store.template(row.template_id)!.fields) as TemplateFieldT[];
      return signingPage({ row, fields, channels: svc.channels(row), ...extra });
    };

    page.get('/sign/:token', { schema: { hide: true, params: TokenParams, response: Html } }, async (req, reply) => {
      const row = svc.viewed(req.params.token);
      if (!row) return html(reply, 404, (await import('./page.js')).notFoundPage());
      return html(reply, 200, await render(row.signing_token));
    });

    page.post(
      '/sign/:token/code',
      { schema: { hide: true, params: TokenParams, body: Type.Object({ channel: Type.String() }), response: Html } },
      async (req, reply) => {
        const token = req.params.token;
        if (!svc.store.byToken(token)) return html(reply, 404, (await import('./page.js')).notFoundPage());
        const channel = req.body.channel as CodeChannel;
        let made;
        try {
          made = svc.newCode(token, channel);
        } catch (err) {
          if (err instanceof SigningError) return html(reply, 400, await render(token, { error: err.message }));
          throw err;
        }
        const customer = JSON.parse(made.row.customer) as { email: string | null; phone: string | null };
        const text = `Su código para firmar "${made.row.title}" es ${made.code}. Vence en ${ctx.config.contracts.code_ttl_minutes} minutos.`;
        try {
          if (channel === 'email') await contractDelivery(ctx).email({ to: customer.email!, subject: `Código para firmar: ${made.row.title}`, text });
          if (channel === 'messaging') await contractDelivery(ctx).message({ to: customer.phone!, subject: made.row.title, text });
        } catch (err) {
          ctx.log.warn({ err, contract: made.row.id, channel }, 'signing code delivery failed');
          return html(reply, 400, await render(token, { error: 'No pudimos enviar el código; intente de nuevo u otro medio.' }));
        }
        if (channel === 'sandbox') return html(reply, 200, await render(token, { notice: 'Código generado (sandbox).', sandboxCode: made.code }));
        return html(reply, 200, await render(token, { notice: `Le enviamos un código por ${channel === 'email' ? 'correo electrónico' : 'mensaje'}.` }));
      },
    );

    page.post(
      '/sign/:token/complete',
      {
        schema: {
          hide: true,
          params: TokenParams,
          body: Type.Object(
            { code: Type.String({ maxLength: 20 }), action: Type.Union([Type.Literal('sign'), Type.Literal('decline')]) },
            { additionalProperties: Type.String({ maxLength: 2000 }) },
          ),
          response: Html,
        },
      },
      async (req, reply) => {
        const token = req.params.token;
        if (!svc.store.byToken(token)) return html(reply, 404, (await import('./page.js')).notFoundPage());
        const body = req.body as Record<string, string>;
        const fields: Record<string, string> = {};
        for (const [k, v] of Object.entries(body)) if (k.startsWith('field_')) fields[k.slice(6)] = v;
        try {
          const row = svc.complete(token, body.code, body.action === 'decline' ? { decline: body.decline_reason?.trim() || null } : { sign: fields });
          if (row.status === 'signed')
            await svc.renderPdf(row).catch((err) => ctx.log.error({ err, contract: row.id }, 'rendering the signed PDF failed; the worker retries'));
          return html(reply, 200, await render(token, { notice: row.status === 'signed' ? 'Contrato firmado.' : 'Contrato rechazado.' }));
        } catch (err) {
          if (err instanceof SigningError) return html(reply, 400, await render(token, { error: err.message }));
          throw err;
        }
      },
    );

    page.get('/sign/:token/pdf', { schema: { hide: true, params: TokenParams, response: Html } }, async (req, reply) => {
      const row = svc.store.byToken(req.params.token);
      if (!row) return html(reply, 404, (await import('./page.js')).notFoundPage());
      if (!row.pdf_file) return html(reply, 409, await render(row.signing_token, { error: 'El PDF firmado aún no está disponible.' }));
      return reply
        .header('content-type', 'application/pdf')
        .header('content-disposition', `attachment; filename="${row.id}.pdf"`)
        .send(createReadStream(join(svc.pdfDir(), row.pdf_file)) as unknown as string);
    });
  });
}
