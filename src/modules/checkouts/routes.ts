import { Type } from '@sinclair/typebox';
import { sendCommitted } from '../../api/idempotency.js';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { pageOf, parseBound, setPageHeaders } from '../../api/pagination.js';
import { invalid, notFound } from '../../errors.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import type { FastifyRequest } from 'fastify';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { CheckoutListQuery, CheckoutSchema, CreateCheckoutBody, UpdateCheckoutBody } from './schema.js';
import { createCheckout, getCheckoutIn, listCheckouts, updateCheckout } from './service.js';
import { customerIdsOfUser } from '../customers/service.js';

/**
 * The account a new checkout belongs to. `custom_account_id` names a direct connected child of the
 * key's account (as X-ACCOUNT-ID does, spec 5 rule 2; not a grandchild): the checkout, its payment
 * and the ledger charge are then the child's, and the platform hears its events with
 * `connected: true`. A test key may name the child by its live id (the hosted service has one id for
 * both environments): it means that child's sandbox.
 */
function chargingAccount(ctx: AppContext, req: FastifyRequest, id: string | null | undefined): Account {
  const acting = requireAccount(req);
  if (!id || id === acting.id) return acting;
  const refuse = () => invalid({ custom_account_id: 'is not a connected account of this account' });
  // Through X-ACCOUNT-ID the request already acts inside a child: a second hop would be a grandchild.
  if (req.auth.keyAccount && acting.id !== req.auth.keyAccount.id) throw refuse();
  const accounts = accountsOf(ctx);
  let child = accounts.account(id);
  if (child?.live_mode && !acting.live_mode) child = accounts.sandboxOf(child.id);
  if (!child || child.parent_account_id !== acting.id || child.live_mode !== acting.live_mode) throw refuse();
  return child;
}

export function checkoutRoutes(app: ApiApp, ctx: AppContext): void {
  app.post(
    '/checkouts',
    { schema: { tags: ['checkouts'], body: CreateCheckoutBody, response: { 201: CheckoutSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const { custom_account_id: onBehalfOf, ...body } = req.body;
      const account = chargingAccount(ctx, req, onBehalfOf);
      return sendCommitted(ctx.db, req, reply, 201, () => createCheckout(ctx, account, body));
    },
  );

  app.get(
    '/checkouts',
    { schema: { tags: ['checkouts'], querystring: CheckoutListQuery, response: { 200: Type.Array(CheckoutSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const q = req.query;
      const page = pageOf(q);
      const { accountIds, liveMode } = readScope(req);
      const filter = {
        status: q.status,
        from: q.from_time ? parseBound(q.from_time, 'from_time', false) : undefined,
        until: q.until_time ? parseBound(q.until_time, 'until_time', true) : undefined,
        // The checkouts of the customers that user is (a customer's user: the account's user of its e-mail).
        customerIds: q.user_id ? customerIdsOfUser(ctx, accountIds.map((id) => accountsOf(ctx).account(id)!).filter(Boolean), liveMode, q.user_id) : undefined,
      };
      const { rows, total } = listCheckouts(ctx, accountIds, liveMode, page.limit, page.offset, filter);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get('/checkouts/:id', { schema: { tags: ['checkouts'], params: IdParams, response: { 200: CheckoutSchema, ...ErrorResponses } } }, async (req) => {
    const { accountIds, liveMode } = readScope(req);
    const checkout = getCheckoutIn(ctx, accountIds, liveMode, req.params.id);
    if (!checkout) throw notFound('checkout', req.params.id);
    return checkout;
  });

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/checkouts/:id',
      schema: { tags: ['checkouts'], params: IdParams, body: UpdateCheckoutBody, response: { 200: CheckoutSchema, ...ErrorResponses } },
      handler: async (req, reply) => sendCommitted(ctx.db, req, reply, 200, () => updateCheckout(ctx, requireAccount(req), req.params.id, req.body)),
    });
  }
}
