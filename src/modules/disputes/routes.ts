import { sendCommitted } from '../../api/idempotency.js';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import { ApiError } from '../../errors.js';
import { ErrorResponses, IdParams } from '../../api/schemas.js';
import { AdvanceDisputeBody, DisputeSchema, OpenDisputeBody } from './schema.js';
import { advanceDispute, openDispute } from './service.js';

/**
 * Disputes have no read route: the hosted reference publishes none (docs/events.md). The card
 * network is outside the box, so in a sandbox two test helpers play it, through the service
 * functions a processor's notification calls.
 */
export function disputeRoutes(app: ApiApp, ctx: AppContext): void {
  const tags = ['test helpers'];
  // Live keys must not learn that the helpers exist: the same 404 as an unknown route.
  const sandboxOnly = (req: { url: string }, account: { live_mode: boolean }) => {
    if (account.live_mode) throw new ApiError('route_not_found', { message: `No such endpoint: POST ${req.url.split('?')[0]}` });
  };

  app.post(
    '/test_helpers/payment_intents/:id/dispute',
    { schema: { tags, params: IdParams, body: OpenDisputeBody, response: { 201: DisputeSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      sandboxOnly(req, account);
      return sendCommitted(ctx.db, req, reply, 201, () => openDispute(ctx, { accountIds: [account.id], liveMode: false }, req.params.id, req.body));
    },
  );

  app.post(
    '/test_helpers/disputes/:id/advance',
    { schema: { tags, params: IdParams, body: AdvanceDisputeBody, response: { 200: DisputeSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      sandboxOnly(req, account);
      return sendCommitted(ctx.db, req, reply, 200, () => advanceDispute(ctx, { accountIds: [account.id], liveMode: false }, req.params.id, req.body.outcome));
    },
  );
}
