import type { ApiApp } from '../../api/module.js';
import { sendCommitted } from '../../api/idempotency.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { ApiError, notFound } from '../../errors.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { CheckoutSchema } from '../checkouts/schema.js';
import {
  CryptoConfirmationBody,
  PayBody,
  PayResult,
  PayWithBalanceBody,
  PendingBody,
  PaymentIntentPatch,
  PaymentIntentSchema,
  TransferArrivalBody,
} from './schema.js';
import {
  abandonInSandbox,
  getPaymentIntent,
  holdInSandbox,
  payCheckoutFromBalance,
  payInSandbox,
  recordBankTransferArrival,
  recordCryptoConfirmation,
  setPaymentIntentTaxInvoiceUrl,
  type SettleResult,
} from './service.js';
import { randomBytes } from 'node:crypto';

/** The answer of the sandbox helpers that settle a checkout (`PayResult`). */
function payResult(r: SettleResult, checkoutId: string) {
  return {
    status: r.status,
    intent_id: r.intentId,
    payment_intent_id: r.paymentIntentId,
    balance_transaction_id: r.balanceTransactionId,
    checkout_id: checkoutId,
  };
}

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

  // Live keys must not learn that the helpers exist: the same 404 as an unknown route.
  const sandboxOnly = (req: { url: string }, account: { live_mode: boolean }) => {
    if (account.live_mode) throw new ApiError('route_not_found', { message: `No such endpoint: POST ${req.url.split('?')[0]}` });
  };

  /** gaps.md sandbox helper: pays a checkout by card or bank transfer, as a processor would. */
  app.post(
    '/test_helpers/checkouts/:id/pay',
    { schema: { tags: ['test helpers'], params: IdParams, body: PayBody, response: { 200: PayResult, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      sandboxOnly(req, account);
      return sendCommitted(ctx.db, req, reply, 200, () => {
        const { method, outcome, failure_reason } = req.body;
        return payResult(payInSandbox(ctx, account, req.params.id, { method, outcome, failureReason: failure_reason }), req.params.id);
      });
    },
  );

  /**
   * Sandbox helper: a payment that waits before its outcome, as the sandbox checkout page starts it:
   * `card` asks the payer to authenticate (`needs_payer_authentication`), `bank_transfer` waits for
   * the money (`payment_in_progress`). `/pay` settles it afterwards.
   */
  app.post(
    '/test_helpers/checkouts/:id/pending',
    { schema: { tags: ['test helpers'], params: IdParams, body: PendingBody, response: { 200: CheckoutSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      sandboxOnly(req, account);
      return sendCommitted(ctx.db, req, reply, 200, () => holdInSandbox(ctx, account, req.params.id, req.body.method));
    },
  );

  /** Sandbox helper: the payer gives up a waiting payment (a pending transfer is canceled: `intent.canceled`). */
  app.post(
    '/test_helpers/checkouts/:id/abandon',
    { schema: { tags: ['test helpers'], params: IdParams, response: { 200: CheckoutSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      sandboxOnly(req, account);
      return sendCommitted(ctx.db, req, reply, 200, () => abandonInSandbox(ctx, account, req.params.id));
    },
  );

  /**
   * Sandbox helper: the bank's notice that money arrived for a pending transfer, with the amount
   * that arrived (less than due: the payment fails, `amount_short`). The code a real bank notice uses.
   */
  app.post(
    '/test_helpers/payment_intents/:id/receive_transfer',
    { schema: { tags: ['test helpers'], params: IdParams, body: TransferArrivalBody, response: { 200: PaymentIntentSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      sandboxOnly(req, account);
      return sendCommitted(ctx.db, req, reply, 200, () => {
        const { amount_in_cents, bank_reference, sender_comment, automated } = req.body;
        recordBankTransferArrival(ctx, account, req.params.id, {
          amountInCents: amount_in_cents,
          bankReference: bank_reference,
          senderComment: sender_comment,
          automated,
        });
        return getPaymentIntent(ctx, [account.id], account.live_mode, req.params.id)!;
      });
    },
  );

  /**
   * Sandbox helper: the checkout is paid from another sandbox account's balance, as that account
   * authorizes it on the checkout page (`payCheckoutFromBalance`, the same code). The merchant's key
   * calls it and names the payer.
   */
  app.post(
    '/test_helpers/checkouts/:id/pay_with_balance',
    { schema: { tags: ['test helpers'], params: IdParams, body: PayWithBalanceBody, response: { 200: PayResult, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      sandboxOnly(req, account);
      return sendCommitted(ctx.db, req, reply, 200, () => {
        return payResult(payCheckoutFromBalance(ctx, account, req.params.id, req.body.payer_account_id), req.params.id);
      });
    },
  );

  /**
   * Sandbox helper: the network confirms (or reverts) the transaction of a pending crypto payment,
   * with the amount it carried (less than due: `amount_short`). The code a real chain notice uses.
   */
  app.post(
    '/test_helpers/payment_intents/:id/confirm_crypto',
    { schema: { tags: ['test helpers'], params: IdParams, body: CryptoConfirmationBody, response: { 200: PaymentIntentSchema, ...ErrorResponses } } },
    async (req, reply) => {
      const account = requireAccount(req);
      sandboxOnly(req, account);
      return sendCommitted(ctx.db, req, reply, 200, () => {
        const { amount_in_cents, transaction_hash, outcome } = req.body;
        recordCryptoConfirmation(ctx, account, req.params.id, {
          amountInCents: amount_in_cents,
          // A sandbox transaction gets a made-up hash of the real form.
          transactionHash: transaction_hash ?? `0x${randomBytes(32).toString('hex')}`,
          succeeded: outcome !== 'reverted',
        });
        return getPaymentIntent(ctx, [account.id], account.live_mode, req.params.id)!;
      });
    },
  );
}
