import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import { ApiError } from '../../errors.js';
import type { Checkout, CheckoutHooks, TransferSetup } from '../checkouts/schema.js';
import { setCheckoutTransferSetups } from '../checkouts/service.js';
import { createTransfer } from './service.js';

/**
 * A paid checkout's split (hosted `transfer_setups`), inside the payment's transaction: each pending
 * share becomes a peer transfer from the checkout's account to its recipient (ledger `transfer` rows,
 * `transfer.sent` and `transfer.received`), and the share is `completed` with its `transfer_id`. A
 * share the balance cannot cover (the processor's fee came off the charge) is `failed` with the reason
 * and moves nothing; the payment itself stands. A settlement repeated finds no pending share.
 */
function splitPaidCheckout(ctx: AppContext, account: Account, checkout: Checkout): void {
  if (!checkout.transfer_setups.some((t) => t.status === 'pending')) return;
  const after: TransferSetup[] = checkout.transfer_setups.map((t) => {
    if (t.status !== 'pending') return t;
    try {
      const transfer = createTransfer(ctx, account, {
        amount_in_cents: t.amount_in_cents,
        currency: t.currency as 'GTQ' | 'USD',
        recipient_id: t.recipient_id,
        note: `Split of checkout ${checkout.id}`,
      });
      return { ...t, status: 'completed', transfer_id: transfer.id };
    } catch (err) {
      // createTransfer runs in a savepoint: its rows and events are gone with the error.
      if (!(err instanceof ApiError)) throw err;
      const reason = Object.values(err.errors ?? {}).flat()[0] ?? err.message;
      return { ...t, status: 'failed', failure_reason: `${err.code}: ${reason}` };
    }
  });
  setCheckoutTransferSetups(ctx, checkout.id, after);
}

export const transferSetupHooks: CheckoutHooks = { afterPay: splitPaidCheckout };
