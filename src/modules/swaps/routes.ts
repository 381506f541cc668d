import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import { sendCommitted } from '../../api/idempotency.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { pageOf, setPageHeaders } from '../../api/pagination.js';
import { ApiError } from '../../errors.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { AdvanceSwapBody, CreateSwapBody, SwapListQuery, SwapSchema } from './schema.js';
import { createSwap, getSwap, listSwaps, settleSwap } from './service.js';

export function swapRoutes(app: ApiApp, ctx: AppContext): void {
  const tags = ['swaps'];

  app.post('/swaps', { schema: { tags, body: CreateSwapBody, response: { 201: SwapSchema, ...ErrorResponses } } }, async (req, reply) =>
    sendCommitted(ctx.db, req, reply, 201, () => createSwap(ctx, requireAccount(req), req.body)),
  );

  app.get('/swaps', { schema: { tags, querystring: SwapListQuery, response: { 200: Type.Array(SwapSchema), ...ErrorResponses } } }, async (req, reply) => {
    const page = pageOf(req.query);
    const { rows, total } = listSwaps(ctx, readScope(req), page.limit, page.offset);
    setPageHeaders(req, reply, page, total);
    return rows;
  });

  app.get('/swaps/:id', { schema: { tags, params: IdParams, response: { 200: SwapSchema, ...ErrorResponses } } }, async (req) =>
    getSwap(ctx, readScope(req), req.params.id),
  );

  /** Sandbox helper: the exchange's answer about a pending swap (`settleSwap`, the code its notice uses). */
  app.post(
    '/test_helpers/swaps/:id/advance',
    { schema: { tags: ['test helpers'], params: IdParams, body: AdvanceSwapBody, response: { 200: SwapSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      // Live keys must not learn that the helpers exist: the same 404 as an unknown route.
      if (account.live_mode) throw new ApiError('route_not_found', { message: `No such endpoint: POST ${req.url.split('?')[0]}` });
      return sendCommitted(ctx.db, req, reply, 200, () =>
        settleSwap(ctx, account, req.params.id, { outcome: req.body.outcome, failureReason: req.body.failure_reason }),
      );
    },
  );
}
