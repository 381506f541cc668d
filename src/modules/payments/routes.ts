import type { ApiApp } from '../../api/module.js';
import { sendCommitted } from '../../api/idempotency.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { ApiError, notFound } from '../../errors.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { PayBody, PayResult, PaymentIntentPatch, PaymentIntentSchema } from './schema.js';
import { getPaymentIntent, setPaymentIntentTaxInvoiceUrl, settleCheckoutPayment } from './service.js';

export function paymentRoutes(app: ApiApp, ctx: AppContext): void {
  app.get(
    '/payment_intents/:id',
    { schema: { tags: ['payment intents'], params: IdParams, response: { 200: PaymentIntentSchema, ...ErrorResponses } } },
    async (req) => {
      const { accountIds, liveMode } = readScope(req);
      const pa = getPaymentIntent(ctx, accountIds, liveMode, req.params.id);
      if (!pa) throw notFound('payment intent', req.params.id);
      return pa;
    },
  );

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/payment_intents/:id',
      schema: { tags: ['payment intents'], params: IdParams, body: PaymentIntentPatch, response: { 200: PaymentIntentSchema, ...ErrorResponses } },
      handler: async (req, reply) =>
        sendCommitted(ctx.db, req, reply, 200, () => setPaymentIntentTaxInvoiceUrl(ctx, requireAccount(req), req.params.id, req.body.tax_invoice_url)),
    });
  }

  /** gaps.md sandbox helper: pays a checkout by card or bank transfer, as a processor would. */
  app.post(
    '/test_helpers/checkouts/:id/pay',
    { schema: { tags: ['test helpers'], params: IdParams, body: PayBody, response: { 200: PayResult, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      // Live keys must not learn that the helper exists: the same 404 as an unknown route.
      if (account.live_mode) throw new ApiError('route_not_found', { message: `No such endpoint: POST ${req.url.split('?')[0]}` });
      const card = req.body.method === 'card';
      return sendCommitted(ctx.db, req, reply, 200, () => {
      const result = settleCheckoutPayment(ctx, account, {
        checkoutId: req.params.id,
        method: req.body.method,
        outcome: req.body.outcome,
        failureReason: req.body.outcome === 'failed' ? (req.body.failure_reason ?? (card ? 'card_declined' : 'funds_not_received')) : null,
        card: card ? { network: 'visa', last4: '4242' } : null,
        authorizationCode: card && req.body.outcome === 'succeeded' ? 'SANDBOX' : null,
        processorReference: card ? null : 'SANDBOX-TRANSFER',
        channel: 'sandbox',
      });
      return {
        status: result.status,
        intent_id: result.intentId,
        payment_intent_id: result.paymentIntentId,
        balance_transaction_id: result.balanceTransactionId,
        checkout_id: req.params.id,
      };
      });
    },
  );
}
