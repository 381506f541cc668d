import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { notFound } from '../../errors.js';
import type { Account } from '../../accounts/service.js';
import type { Checkout } from '../checkouts/schema.js';
import { startWaitingPayment } from './bank-transfers.js';
import { finishPendingPayment } from './pending.js';
import { resultOf, type SettleResult } from './records.js';
import { paymentsStore, type PaymentIntentRow } from './store.js';

/**
 * Crypto payments (docs/events.md "Crypto payments"): the buyer chooses to pay a checkout in USDC;
 * the checkout turns `payment_in_progress`, a `pending` `crypto` payment intent and its intent are
 * recorded, `intent.pending` (and `crypto_intent.pending` for `event_format: both`) emitted. The
 * network's confirmation of the transaction settles it (`recordCryptoConfirmation`: the code a real
 * chain notification goes through, and the sandbox helper): the whole amount succeeds (ledger
 * `charge` with its fee, `intent.succeeded`, `crypto_intent.succeeded`), less fails it
 * (`amount_short`), a reverted transaction fails it (`transaction_failed`). Its outcome is pushed
 * to the central as one `checkout_payment` record, like a bank transfer's.
 */
export function startCryptoPayment(
  ctx: AppContext,
  account: Account,
  checkoutId: string,
  opts: { channel: string },
): { checkout: Checkout; payment: PaymentIntentRow } {
  return startWaitingPayment(ctx, account, checkoutId, 'crypto', opts);
}

export interface CryptoConfirmation {
  /** What the transaction carried, in the checkout's currency at the rate quoted when it started. */
  amountInCents: number;
  transactionHash: string;
  /** False: the transaction was reverted on chain. */
  succeeded: boolean;
}

export function recordCryptoConfirmation(ctx: AppContext, account: Account, paymentIntentId: string, c: CryptoConfirmation): SettleResult {
  return tx(ctx.db, () => {
    const pa = paymentsStore(ctx.db).byId(paymentIntentId);
    if (!pa || pa.account_id !== account.id || pa.method !== 'crypto') throw notFound('payment intent', paymentIntentId);
    // A repeated notice (chains re-announce confirmations) changes nothing.
    if (pa.status !== 'pending') return resultOf(pa);
    const failure = !c.succeeded ? 'transaction_failed' : c.amountInCents < pa.amount_in_cents ? 'amount_short' : null;
    return resultOf(
      finishPendingPayment(ctx, account, pa, failure ? { type: 'FAIL' } : { type: 'SUCCEED' }, {
        failureReason: failure,
        processorReference: c.transactionHash,
      }),
    );
  });
}
