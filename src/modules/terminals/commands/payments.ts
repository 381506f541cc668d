import type { AppContext } from '../../../context.js';
import type { Account } from '../../../accounts/service.js';
import { checkoutStatusIn, createCheckout, getCheckout, setCheckoutStatus } from '../../checkouts/service.js';
import { finishPendingPayment, markPaymentForwarded, paymentIntentRow, settleCheckoutPayment, startPendingPayment } from '../../payments/service.js';
import type { TerminalOutcome } from './machine.js';

/**
 * The calls terminal commands make into the money area, in one place: a checkout per command, and
 * the settlement of its terminal payment (checkout paid or failed, intent, ledger charge with fee,
 * intent.* events, the `terminal_payment` sync record), idempotent per checkout. Both join the
 * caller's transaction.
 */
export interface CheckoutRef {
  id: string;
  url: string | null;
}

export function checkoutForCommand(
  ctx: AppContext,
  account: Account,
  input: {
    items: Array<{ name: string; amount_in_cents: number; quantity: number }>;
    currency: string;
    externalId: string;
    commandId: string;
  },
): CheckoutRef {
  const created = createCheckout(ctx, account, {
    items: input.items.map((i) => ({ ...i, currency: input.currency })),
    currency: input.currency,
    metadata: { external_id: input.externalId, terminal_session_command_id: input.commandId },
  });
  return { id: created.id, url: created.url };
}

export function checkoutStatusOf(ctx: AppContext, accountId: string, liveMode: boolean, checkoutId: string): string | undefined {
  return checkoutStatusIn(ctx, [accountId], liveMode, checkoutId);
}

export function settleTerminalPayment(
  ctx: AppContext,
  account: Account,
  input: { checkoutId: string; installments: number | null; result: TerminalOutcome },
): void {
  const r = input.result;
  settleCheckoutPayment(ctx, account, {
    checkoutId: input.checkoutId,
    method: 'terminal',
    outcome: r.outcome === 'approved' ? 'succeeded' : 'failed',
    failureReason: r.outcome === 'approved' ? null : (r.reason ?? (r.outcome === 'declined' ? 'declined' : 'terminal_error')),
    card: r.card ?? null,
    authorizationCode: r.authorization_code ?? null,
    processorReference: r.processor_reference ?? null,
    installments: input.installments,
    channel: 'terminal',
  });
}

/**
 * Moves the checkout into or out of `payment_in_progress` (money's checkout machine), only from the
 * status where that move exists: a checkout settled or changed by another path is left alone.
 */
export function markCheckoutInProgress(ctx: AppContext, account: Account, checkoutId: string, inProgress: boolean): void {
  const status = checkoutStatusIn(ctx, [account.id], account.live_mode, checkoutId);
  if (inProgress && status === 'unpaid') setCheckoutStatus(ctx, account, checkoutId, { type: 'START_PAYMENT' });
  if (!inProgress && status === 'payment_in_progress') setCheckoutStatus(ctx, account, checkoutId, { type: 'ABANDON_PAYMENT' });
}

/**
 * A card the terminal approved offline (stored): the checkout waits `payment_in_progress` for a
 * `pending` terminal payment intent, and `intent.pending` is emitted (the same start as a bank
 * transfer's). Returns the payment intent's id, or null when the checkout cannot wait for it (it was
 * settled or changed by another path: the outcome then settles it as before, or leaves it alone).
 * Inside the caller's transaction.
 */
export function startStoredTerminalPayment(
  ctx: AppContext,
  account: Account,
  checkoutId: string,
  card: { network: string; last4: string } | null,
  storedAt: string,
): string | null {
  const checkout = getCheckout(ctx, account, checkoutId);
  if (!checkout || (checkout.status !== 'unpaid' && checkout.status !== 'payment_in_progress')) return null;
  return startPendingPayment(ctx, account, checkout, {
    method: 'terminal',
    channel: 'terminal',
    rawStatus: 'stored_offline',
    card,
    joinsPaymentInProgress: true,
    offlineStoredAt: storedAt,
  }).payment.id;
}

/** A stored card the terminal handed to its processor: the payment intent keeps the time. In the caller's transaction. */
export function forwardStoredTerminalPayment(ctx: AppContext, paymentIntentId: string | null, at: string): void {
  if (paymentIntentId) markPaymentForwarded(ctx, paymentIntentId, at);
}

/**
 * The final outcome of a stored card, in the caller's transaction. Its pending payment intent takes
 * it: approved, the checkout is paid (ledger `charge` with fee, `intent.succeeded`, the
 * `terminal_payment` record); declined or expired, the intent fails (`intent.failed`, the record)
 * and the checkout is owed again (`unpaid`). Without a pending payment (none was started, or it is
 * settled already) an approval settles the checkout as an online one would (idempotent per
 * checkout) and a failure returns the checkout to `unpaid` if it still waits.
 */
export function finishStoredTerminalPayment(
  ctx: AppContext,
  account: Account,
  input: { checkoutId: string; paymentIntentId: string | null; result: TerminalOutcome; failureReason: string },
): void {
  const r = input.result;
  const pa = input.paymentIntentId ? paymentIntentRow(ctx, [account.id], account.live_mode, input.paymentIntentId) : undefined;
  if (pa?.status === 'pending') {
    const approved = r.outcome === 'approved';
    finishPendingPayment(
      ctx,
      account,
      pa,
      { type: approved ? 'SUCCEED' : 'FAIL' },
      {
        failureReason: approved ? null : input.failureReason,
        card: r.card ?? null,
        authorizationCode: r.authorization_code ?? null,
        processorReference: r.processor_reference ?? null,
        owedAgainOnFailure: true,
      },
    );
    return;
  }
  if (r.outcome === 'approved') settleTerminalPayment(ctx, account, { checkoutId: input.checkoutId, installments: null, result: r });
  else markCheckoutInProgress(ctx, account, input.checkoutId, false);
}
