import { Type } from '@sinclair/typebox';
import { sendCommitted } from '../../api/idempotency.js';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { pageOf, setPageHeaders } from '../../api/pagination.js';
import { BankAccountListQuery, BankAccountParams, BankAccountSchema, BankSchema, CreateBankAccountBody, UpdateBankAccountBody } from './schema.js';
import { archiveBankAccount, createBankAccount, getBankAccount, listBankAccounts, listBanks, updateBankAccount } from './service.js';
import { ErrorResponses } from '../../api/schemas.js';

const tags = ['bank accounts'];

export function bankAccountRoutes(app: ApiApp, ctx: AppContext): void {
  app.get('/banks', { schema: { tags, response: { 200: Type.Array(BankSchema), ...ErrorResponses } } }, async () => listBanks());

  app.post('/bank_accounts', { schema: { tags, body: CreateBankAccountBody, response: { 201: BankAccountSchema, ...ErrorResponses } } }, async (req, reply) =>
    sendCommitted(ctx.db, req, reply, 201, () => createBankAccount(ctx, requireAccount(req), req.body)),
  );

  app.get(
    '/bank_accounts',
    { schema: { tags, querystring: BankAccountListQuery, response: { 200: Type.Array(BankAccountSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { rows, total } = listBankAccounts(ctx, readScope(req), page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get('/bank_accounts/:id', { schema: { tags, params: BankAccountParams, response: { 200: BankAccountSchema, ...ErrorResponses } } }, async (req) =>
    getBankAccount(ctx, readScope(req), req.params.id),
  );

  // Gaps.md: updates accept PATCH and PUT alike.
  for (const method of ['patch', 'put'] as const) {
    app[method](
      '/bank_accounts/:id',
      { schema: { tags, params: BankAccountParams, body: UpdateBankAccountBody, response: { 200: BankAccountSchema, ...ErrorResponses } } },
      async (req, reply) =>
        sendCommitted(ctx.db, req, reply, 200, () => updateBankAccount(ctx, requireAccount(req), req.params.id, req.body as Record<string, unknown>)),
    );
  }

  app.delete(
    '/bank_accounts/:id',
    { schema: { tags, params: BankAccountParams, response: { 200: BankAccountSchema, ...ErrorResponses } } },
    async (req, reply) => sendCommitted(ctx.db, req, reply, 200, () => archiveBankAccount(ctx, requireAccount(req), req.params.id)),
  );
}
