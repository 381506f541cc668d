import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope } from '../../api/auth.js';
import { pageOf, parseBound, setPageHeaders } from '../../api/pagination.js';
import { ApiError, notFound } from '../../errors.js';
import { BalanceSchema } from '../accounts/schema.js';
import { balancesFor, getBalanceTransaction, listBalanceTransactions } from './service.js';
import { BalanceTransactionQuery, BalanceTransactionSchema } from './schema.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';

export function ledgerRoutes(app: ApiApp, ctx: AppContext): void {
  app.get(
    '/balance_transactions',
    { schema: { tags: ['ledger'], querystring: BalanceTransactionQuery, response: { 200: Type.Array(BalanceTransactionSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const q = req.query;
      if ((q.from_time === undefined) !== (q.until_time === undefined)) throw new ApiError('invalid_date_range');
      const from = q.from_time ? parseBound(q.from_time, 'from_time', false) : undefined;
      const until = q.until_time ? parseBound(q.until_time, 'until_time', true) : undefined;
      const page = pageOf(q);
      const scope = readScope(req);
      const { rows, total } = listBalanceTransactions(ctx, { ...scope, currency: q.currency, type: q.type, from, until }, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get(
    '/balance_transactions/:id',
    { schema: { tags: ['ledger'], params: IdParams, response: { 200: BalanceTransactionSchema, ...ErrorResponses } } },
    async (req) => {
      const { accountIds, liveMode } = readScope(req);
      const row = getBalanceTransaction(ctx, accountIds, liveMode, req.params.id);
      if (!row) throw notFound('balance transaction', req.params.id);
      return row;
    },
  );
}

/** GET /balances from the ledger; an organization key without X-ACCOUNT-ID gets every account's rows, each with its account_id. */
export function balanceRoutes(app: ApiApp, ctx: AppContext): void {
  app.get('/balances', { schema: { tags: ['account'], response: { 200: Type.Array(BalanceSchema), ...ErrorResponses } } }, async (req) => {
    const many = req.auth.account === null;
    return balancesFor(ctx, req.auth.accountIds, req.auth.liveMode).map((b) => ({
      currency: b.currency,
      available_in_cents: b.available_in_cents,
      pending_in_cents: b.pending_in_cents,
      ...(many ? { account_id: b.account_id } : {}),
    }));
  });
}
