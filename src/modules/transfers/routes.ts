import { sendCommitted } from '../../api/idempotency.js';
import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { pageOf, setPageHeaders } from '../../api/pagination.js';
import { ApiError } from '../../errors.js';
import {
  AdvanceWithdrawalBody,
  CreateTransferBody,
  CreateWithdrawalBody,
  IdParams,
  ReviewTransferBody,
  TransferListQuery,
  TransferSchema,
  WithdrawalListQuery,
  WithdrawalSchema,
} from './schema.js';
import { createTransfer, getTransfer, listTransfers, reviewTransfer } from './service.js';
import { advanceWithdrawal, createWithdrawal, getWithdrawal, listWithdrawals } from './withdrawals.js';
import { ErrorResponses } from '../../api/schemas.js';

export function transferRoutes(app: ApiApp, ctx: AppContext): void {
  const tags = ['transfers'];

  app.post(
    '/transfers',
    { schema: { tags, body: CreateTransferBody, response: { 201: TransferSchema, ...ErrorResponses } } },
    // The Idempotency-Key's answer commits with the money movement.
    async (req, reply) => sendCommitted(ctx.db, req, reply, 201, () => createTransfer(ctx, requireAccount(req), req.body)),
  );

  app.get(
    '/transfers',
    { schema: { tags, querystring: TransferListQuery, response: { 200: Type.Array(TransferSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { rows, total } = listTransfers(ctx, readScope(req), { kind: req.query.kind }, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get('/transfers/:id', { schema: { tags, params: IdParams, response: { 200: TransferSchema, ...ErrorResponses } } }, async (req) =>
    getTransfer(ctx, readScope(req), req.params.id),
  );

  app.post(
    '/withdrawals',
    { schema: { tags: ['withdrawals'], body: CreateWithdrawalBody, response: { 201: WithdrawalSchema, ...ErrorResponses } } },
    async (req, reply) => sendCommitted(ctx.db, req, reply, 201, () => createWithdrawal(ctx, requireAccount(req), req.body)),
  );

  app.get(
    '/withdrawals',
    { schema: { tags: ['withdrawals'], querystring: WithdrawalListQuery, response: { 200: Type.Array(WithdrawalSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { rows, total } = listWithdrawals(ctx, readScope(req), { status: req.query.status }, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get('/withdrawals/:id', { schema: { tags: ['withdrawals'], params: IdParams, response: { 200: WithdrawalSchema, ...ErrorResponses } } }, async (req) =>
    getWithdrawal(ctx, readScope(req), req.params.id),
  );

  // gaps.md: sandbox test helpers answer 404 to live keys, as if they did not exist.
  app.post(
    '/test_helpers/withdrawals/:id/advance',
    { schema: { tags: ['test helpers'], params: IdParams, body: AdvanceWithdrawalBody, response: { 200: WithdrawalSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      if (account.live_mode) throw new ApiError('route_not_found', { message: `No such endpoint: POST ${req.url.split('?')[0]}` });
      return sendCommitted(ctx.db, req, reply, 200, () =>
        advanceWithdrawal(ctx, { accountIds: [account.id], liveMode: false }, req.params.id, req.body.outcome, req.body.failure_reason),
      );
    },
  );

  // The reviewer of a transfer held for review is outside the box in the hosted service: in a
  // sandbox this helper decides, through the function the operator's `posd transfers review` calls.
  app.post(
    '/test_helpers/transfers/:id/review',
    { schema: { tags: ['test helpers'], params: IdParams, body: ReviewTransferBody, response: { 200: TransferSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      if (account.live_mode) throw new ApiError('route_not_found', { message: `No such endpoint: POST ${req.url.split('?')[0]}` });
      return sendCommitted(ctx.db, req, reply, 200, () =>
        reviewTransfer(ctx, { accountIds: [account.id], liveMode: false }, req.params.id, req.body.outcome, req.body.reason),
      );
    },
  );
}
