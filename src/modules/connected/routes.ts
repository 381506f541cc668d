import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import {
  CommissionDefaultBody,
  CommissionDefaultSchema,
  CommissionInvoiceSchema,
  CommissionInvoicingSchema,
  CommissionOverrideBody,
  ConnectedAccountSchema,
  CreateConnectedBody,
  TaxInvoicingBody,
  TaxInvoicingSchema,
  VerificationSchema,
} from './schema.js';
import { ConnectedService } from './service.js';
import { invoiceView } from './views.js';
import { IdParams, errorBodies } from '../../api/schemas.js';

const errors = errorBodies(400, 401, 403, 404, 422, 429);

/** Platform operations on direct children (spec 4.11): the child id is in the path. */
export function connectedRoutes(app: ApiApp, ctx: AppContext): void {
  const svc = new ConnectedService(ctx);
  const tags = ['connected accounts'];

  app.post(
    '/connected_accounts',
    { schema: { tags, body: CreateConnectedBody, response: { 200: ConnectedAccountSchema, 201: ConnectedAccountSchema, ...errors } } },
    async (req, reply) => {
      const r = svc.submit(requireAccount(req), req.body);
      return reply.code(r.created ? 201 : 200).send(r.account);
    },
  );

  app.get('/connected_accounts/:id/verification', { schema: { tags, params: IdParams, response: { 200: VerificationSchema, ...errors } } }, async (req) => {
    const child = svc.requireChild(requireAccount(req), req.params.id);
    return svc.verification(svc.profile(child));
  });

  app.get(
    '/connected_accounts/:id/commission_invoicing',
    { schema: { tags, params: IdParams, response: { 200: CommissionInvoicingSchema, ...errors } } },
    async (req) => svc.commissionInvoicing(svc.profile(svc.requireChild(requireAccount(req), req.params.id))),
  );

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/connected_accounts/:id/commission_invoicing',
      schema: { tags, params: IdParams, body: CommissionOverrideBody, response: { 200: CommissionInvoicingSchema, ...errors } },
      handler: async (req) => svc.setCommissionOverride(requireAccount(req), req.params.id, req.body.override_mode),
    });
    app.route({
      method,
      url: '/commission_invoicing_settings',
      schema: { tags, body: CommissionDefaultBody, response: { 200: CommissionDefaultSchema, ...errors } },
      handler: async (req) => ({ default_mode: svc.setCommissionDefault(requireAccount(req), req.body.default_mode), timezone: 'America/Guatemala' as const }),
    });
    app.route({
      method,
      url: '/connected_accounts/:id/tax_invoicing',
      schema: { tags, params: IdParams, body: TaxInvoicingBody, response: { 200: TaxInvoicingSchema, ...errors } },
      handler: async (req) => svc.activateTaxInvoicing(requireAccount(req), req.params.id, req.body),
    });
  }

  app.get('/commission_invoicing_settings', { schema: { tags, response: { 200: CommissionDefaultSchema, ...errors } } }, async (req) => ({
    default_mode: svc.defaultMode(requireAccount(req).id),
    timezone: 'America/Guatemala' as const,
  }));

  app.get('/connected_accounts/:id/tax_invoicing', { schema: { tags, params: IdParams, response: { 200: TaxInvoicingSchema, ...errors } } }, async (req) => {
    const child = svc.requireChild(requireAccount(req), req.params.id);
    return svc.taxInvoicing(child, svc.profile(child));
  });

  app.get(
    '/connected_accounts/:id/commission_invoices',
    { schema: { tags, params: IdParams, response: { 200: Type.Array(CommissionInvoiceSchema), ...errors } } },
    async (req) => {
      const child = svc.requireChild(requireAccount(req), req.params.id);
      return svc.store.invoicesOf(child.id).map(invoiceView);
    },
  );
}
