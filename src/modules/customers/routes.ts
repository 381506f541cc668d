import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { sendCommitted } from '../../api/idempotency.js';
import { accountsOf } from '../../accounts/service.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { CustomerBody, CustomerList, CustomerSchema } from './schema.js';
import { customerView, findOrCreateCustomerRow, listCustomers, requireCustomer, updateCustomer, userFilter } from './service.js';

const CustomerListQuery = Type.Object({ ...PageQuery, user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) });

export function customerRoutes(app: ApiApp, ctx: AppContext): void {
  const accounts = accountsOf(ctx);

  /** Find-or-create by e-mail: 201 when made, 200 with the existing customer. */
  app.post(
    '/customers',
    { schema: { tags: ['customers'], body: CustomerBody, response: { 200: CustomerSchema, 201: CustomerSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      return sendCommitted(
        ctx.db,
        req,
        reply,
        (r) => (r.created ? 201 : 200),
        () => findOrCreateCustomerRow(ctx, account, req.body),
        (r) => customerView(ctx, r.customer),
      );
    },
  );

  app.get(
    '/customers',
    { schema: { tags: ['customers'], querystring: CustomerListQuery, response: { 200: CustomerList, ...ErrorResponses } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const scoped = req.auth.accountIds.map((id) => accounts.account(id)!).filter(Boolean);
      // Hosted section 5: "alternative lookup by query user_id": the customers that user is.
      const ofUser = req.query.user_id ? userFilter(ctx, req.auth.accountIds, req.auth.liveMode, req.query.user_id) : undefined;
      const { rows, total } = listCustomers(ctx, scoped, req.auth.liveMode, page.limit, page.offset, ofUser);
      setPageHeaders(req, reply, page, total);
      return { customers: rows.map((c) => customerView(ctx, c)) };
    },
  );

  app.get('/customers/:id', { schema: { tags: ['customers'], params: IdParams, response: { 200: CustomerSchema, ...ErrorResponses } } }, async (req) =>
    customerView(ctx, requireCustomer(ctx, requireAccount(req), req.params.id)),
  );

  // Hosted-api.md section 5 (and 17.3: REF says PUT, PM says PATCH; both are served).
  for (const method of ['put', 'patch'] as const) {
    app[method](
      '/customers/:id',
      { schema: { tags: ['customers'], params: IdParams, body: CustomerBody, response: { 200: CustomerSchema, ...ErrorResponses } } },
      async (req, reply) => {
        const account = requireAccount(req);
        return sendCommitted(
          ctx.db,
          req,
          reply,
          200,
          () => updateCustomer(ctx, account, req.params.id, req.body),
          (c) => customerView(ctx, c),
        );
      },
    );
  }
}
