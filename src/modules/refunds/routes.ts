import { Type } from '@sinclair/typebox';
import { sendCommitted } from '../../api/idempotency.js';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { notFound } from '../../errors.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { getRefund, refundPaymentIntent, refundTarget } from './service.js';

const NS = Type.Union([Type.String(), Type.Null()]);

const RefundSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  status: Type.String(),
  payment_intent_id: Type.String(),
  intent_id: Type.String(),
  amount_in_cents: Type.Integer(),
  fee_returned_in_cents: Type.Integer(),
  currency: Type.String(),
  reason: NS,
  balance_transaction_id: NS,
  created_at: Type.String(),
  failure_reason: Type.Optional(NS),
  // Hosted section 8.
  customer: Type.Union([Type.Object({ id: Type.String(), email: NS, full_name: NS }), Type.Null()]),
  user_id: NS,
  account_refunded_amount_in_cents: Type.Integer({ description: 'What left the account: the charge less the fee given back.' }),
  customer_refunded_amount_in_cents: Type.Integer({ description: 'What the buyer gets back: the whole charge.' }),
});

/**
 * The hosted body is `{payment_intent_id}`. Clients also send `intent_id` (the unified `in_` id, or a
 * `pa_`) and `amount_in_cents`: both are taken as docs/compatibility.md decides (a refund is still
 * always of the whole payment).
 */
const RefundBody = Type.Object({
  payment_intent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  intent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  amount_in_cents: Type.Optional(Type.Integer({ minimum: 1 })),
  reason: Type.Optional(Type.String({ maxLength: 500 })),
});

export function refundRoutes(app: ApiApp, ctx: AppContext): void {
  app.post('/refunds', { schema: { tags: ['refunds'], body: RefundBody, response: { 201: RefundSchema, ...ErrorResponses } } }, async (req, reply) =>
    sendCommitted(ctx.db, req, reply, 201, () => {
      const account = requireAccount(req);
      const { payment_intent_id: paId, intent_id: intentId, amount_in_cents: amount, reason } = req.body;
      return refundPaymentIntent(ctx, account, refundTarget(ctx, paId, intentId), { reason, amountInCents: amount });
    }),
  );

  app.get('/refunds/:id', { schema: { tags: ['refunds'], params: IdParams, response: { 200: RefundSchema, ...ErrorResponses } } }, async (req) => {
    const { accountIds, liveMode } = readScope(req);
    const refund = getRefund(ctx, accountIds, liveMode, req.params.id);
    if (!refund) throw notFound('refund', req.params.id);
    return refund;
  });
}
