import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { notFound } from '../../errors.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import { AccountSchema, TestResponse } from './schema.js';
import { accountView } from '../../accounts/view.js';
import { IdParams, errorBodies } from '../../api/schemas.js';

const errors = errorBodies(400, 401, 403, 404, 429);

export function accountRoutes(app: ApiApp, ctx: AppContext): void {
  const accounts = accountsOf(ctx);

  const testView = (account: Account) => ({
    message: `Hello ${account.name}`,
    account_id: account.id,
    name: account.name,
    environment: account.live_mode ? ('live' as const) : ('sandbox' as const),
    sandbox_id: account.live_mode ? null : account.id,
  });
  /** Spec 5 rule 5: an organization key that names no account reads every account of the organization. */
  const everyAccount = (req: FastifyRequest): Account[] | null =>
    req.auth.kind === 'organization' && !req.auth.account ? req.auth.accountIds.map((id) => accounts.account(id)!).filter(Boolean) : null;

  app.get(
    '/test',
    { schema: { tags: ['account'], response: { 200: Type.Union([TestResponse, Type.Array(TestResponse)]), ...errors } } },
    async (req) => everyAccount(req)?.map(testView) ?? testView(requireAccount(req)),
  );

  app.get(
    '/account',
    { schema: { tags: ['account'], response: { 200: Type.Union([AccountSchema, Type.Array(AccountSchema)]), ...errors } } },
    async (req) => everyAccount(req)?.map(accountView) ?? accountView(requireAccount(req)),
  );

  app.get(
    '/connected_accounts',
    { schema: { tags: ['connected accounts'], querystring: Type.Object(PageQuery), response: { 200: Type.Array(AccountSchema), ...errors } } },
    async (req, reply) => {
      const account = requireAccount(req);
      const page = pageOf(req.query);
      const { rows, total } = accounts.children(account.id, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows.map(accountView);
    },
  );

  app.get(
    '/connected_accounts/:id',
    { schema: { tags: ['connected accounts'], params: IdParams, response: { 200: AccountSchema, ...errors } } },
    async (req) => {
      const account = requireAccount(req);
      const child = accounts.account(req.params.id);
      if (!child || child.parent_account_id !== account.id) throw notFound('connected account', req.params.id);
      return accountView(child);
    },
  );
}
