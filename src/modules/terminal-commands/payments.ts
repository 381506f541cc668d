import type { AppContext } from '../../context.js';
import type { Account } from '../accounts/service.js';
import { createCheckout } from '../checkouts/service.js';
import { settleCheckoutPayment } from '../payments/service.js';
import type { TerminalOutcome } from './machine.js';

/**
 * The two calls terminal commands make into the money area, in one place so the shapes they rely
 * on are visible: a checkout per command, and the settlement of its terminal payment (checkout
 * paid or failed, intent, ledger charge with fee, intent.* events, sync record), idempotent per
 * checkout. Both run inside the caller's transaction.
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
    description: string | null;
  },
): CheckoutRef {
  const created = createCheckout(ctx, account, {
    items: input.items.map((i) => ({ ...i, currency: input.currency })),
    currency: input.currency,
    metadata: { external_id: input.externalId, terminal_session_command_id: input.commandId },
  } as never) as unknown as { id: string; url?: string | null; checkout_url?: string | null };
  return { id: created.id, url: created.url ?? created.checkout_url ?? null };
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
  } as never);
}
