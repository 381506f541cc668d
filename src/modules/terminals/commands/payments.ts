import type { AppContext } from '../../../context.js';
import type { Account } from '../../../accounts/service.js';
import { createCheckout, getCheckoutIn, setCheckoutStatus } from '../../checkouts/service.js';
import { settleCheckoutPayment } from '../../payments/service.js';
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
  return getCheckoutIn(ctx, [accountId], liveMode, checkoutId)?.status;
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
  const status = getCheckoutIn(ctx, [account.id], account.live_mode, checkoutId)?.status;
  if (inProgress && status === 'unpaid') setCheckoutStatus(ctx, account, checkoutId, { type: 'START_PAYMENT' });
  if (!inProgress && status === 'payment_in_progress') setCheckoutStatus(ctx, account, checkoutId, { type: 'ABANDON_PAYMENT' });
}
