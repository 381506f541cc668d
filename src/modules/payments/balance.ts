import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { initialState, nextState } from '../../lifecycle.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import { getCheckout, isExpired, setCheckoutStatus } from '../checkouts/service.js';
import { createIntent, intentDocument } from '../intents/service.js';
import { balancesFor, feeFor, postBalanceTransaction } from '../ledger/service.js';
import { balanceDetails } from '../../events/payloads.js';
import { paymentMachine } from './machine.js';
import { chargeDescription, emitPaymentEvents, paymentIntentInput, postPaymentCharge, resultOf, type SettleResult } from './records.js';
import { paymentsStore, type PaymentIntentRow } from './store.js';
import { balancePaymentsStore, type BalancePaymentRow } from './balance-store.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import type { BalancePaymentRecord } from './sync.js';
import { finishPendingPayment, pendingPaymentOf } from './pending.js';

/**
 * Balance payments (docs/events.md "Balance payments"): a checkout paid from another posd account's
 * balance, both accounts on this box and in the same environment. One transaction writes both sides:
 * - the merchant: a `balance` payment intent (pa_) and its intent (`intent.succeeded`, type
 *   `balance`, plus `balance_intent.succeeded` for `event_format: both`), a `charge` ledger row with
 *   its fee, the checkout paid;
 * - the payer: a `payment` ledger row debiting its balance, its own intent (status `paid`) and
 *   `intent.paid`.
 * A payer whose balance is short declines it as a card's bank would: the payment fails
 * (`insufficient_funds`), the checkout turns failed, `intent.failed` (and `balance_intent.failed`)
 * reach the merchant, no money moves and the payer hears nothing.
 * The payer authorizes it (a real payer signs in on the checkout page; the sandbox helper names it).
 * A checkout already paid answers its payment and moves nothing.
 * Both sides reach a central as one `balance_payment` record of the merchant's (payments/sync.ts),
 * a failed one too (its payment intent and intent exist here).
 */
/** Why a balance payment failed: the payer's balance in the checkout's currency was short. */
export const INSUFFICIENT_FUNDS = 'insufficient_funds';

export function payCheckoutFromBalance(ctx: AppContext, merchant: Account, checkoutId: string, payerAccountId: string): SettleResult {
  return tx(ctx.db, () => {
    let checkout = getCheckout(ctx, merchant, checkoutId);
    if (!checkout) throw notFound('checkout', checkoutId);
    // A transfer or crypto payment the buyer announced and never sent is canceled (intent.canceled).
    const waiting = pendingPaymentOf(ctx, checkout);
    if (waiting) {
      finishPendingPayment(ctx, merchant, waiting, { type: 'CANCEL' });
      checkout = getCheckout(ctx, merchant, checkoutId)!;
    }
    const payer = accountsOf(ctx).account(payerAccountId);
    if (!payer || payer.live_mode !== merchant.live_mode) {
      throw invalid({ payer_account_id: `no account with this id in the ${merchant.live_mode ? 'live' : 'sandbox'} environment` });
    }
    if (payer.id === merchant.id) throw invalid({ payer_account_id: 'must be another account than the merchant' });
    const store = paymentsStore(ctx.db);
    if (checkout.status === 'paid' || checkout.status === 'failed') {
      const existing = checkout.payment_intent_id ? store.byId(checkout.payment_intent_id) : undefined;
      if (existing) return resultOf(existing);
    }
    if (checkout.status !== 'unpaid') throw new ApiError('checkout_not_modifiable', { message: `The checkout is ${checkout.status}.` });
    if (isExpired(ctx, checkout)) throw new ApiError('checkout_expired');
    ctx.registry.checkout.beforePay(ctx, checkout.id);

    const at = isoTime(ctx.clock.now());
    const paId = newId('pa');
    const description = chargeDescription(checkout);
    const available = balancesFor(ctx, [payer.id], payer.live_mode).find((b) => b.currency === checkout.currency)?.available_in_cents ?? 0;
    // A short balance declines the payment as a card's bank declines one: failed, nothing moved.
    const short = available < checkout.amount_in_cents;
    const fee = short ? undefined : feeFor(merchant, checkout.amount_in_cents, ctx.config.money);
    const debit = fee
      ? postBalanceTransaction(ctx, {
          accountId: payer.id,
          liveMode: payer.live_mode,
          type: 'payment',
          amountInCents: -checkout.amount_in_cents,
          feeInCents: 0,
          currency: checkout.currency,
          sourceId: paId,
          sourceType: 'payment_intent',
          description: `${merchant.name}: ${description}`.slice(0, 200),
        })
      : undefined;
    const credit = fee
      ? postPaymentCharge(ctx, merchant, { id: paId, amountInCents: checkout.amount_in_cents, currency: checkout.currency, description }, fee)
      : undefined;
    const pa: PaymentIntentRow = {
      id: paId,
      account_id: merchant.id,
      live_mode: merchant.live_mode ? 1 : 0,
      intent_id: newId('in'),
      checkout_id: checkout.id,
      method: 'balance',
      // Settled the moment the payer authorizes it: one move from the machine's start.
      status: nextState(paymentMachine, initialState(paymentMachine), { type: short ? 'FAIL' : 'SUCCEED' })!,
      amount_in_cents: checkout.amount_in_cents,
      currency: checkout.currency,
      fee_in_cents: fee?.fee_in_cents ?? 0,
      commission_in_cents: fee?.commission_in_cents ?? 0,
      vat_withheld_in_cents: fee?.vat_withheld_in_cents ?? 0,
      customer_id: checkout.customer_id,
      failure_reason: short ? INSUFFICIENT_FUNDS : null,
      card_network: null,
      card_last4: null,
      authorization_code: null,
      processor_reference: null,
      installments: null,
      channel: 'balance',
      balance_transaction_id: credit?.id ?? null,
      tax_invoice_url: null,
      created_at: at,
      updated_at: at,
      payment_method_id: newId('pay_m'),
    };
    store.insert(pa);
    createIntent(ctx, paymentIntentInput(pa, checkout, short ? INSUFFICIENT_FUNDS : 'succeeded', {}, { payerAccountId: payer.id }));
    const settled = setCheckoutStatus(
      ctx,
      merchant,
      checkout.id,
      { type: short ? 'PAYMENT_FAILED' : 'PAYMENT_SUCCEEDED' },
      { latestIntentId: pa.intent_id, paymentIntentId: paId },
    );
    const merchantDoc = emitPaymentEvents(ctx, merchant, pa, settled);
    // Both sides go to the central in one record of the merchant's (payments/sync.ts
    // `balance_payment`): its applier writes the payer's side too, each row once by id.
    const push = (payerSide: BalancePaymentRecord['payer']) => {
      const record: BalancePaymentRecord = {
        payment_intent: pa,
        intent: merchantDoc,
        checkout: settled,
        balance_transaction: credit ?? null,
        payer_account_id: payer.id,
        payer: payerSide,
      };
      appendSyncRecord(ctx.db, { kind: 'balance_payment', accountId: merchant.id, liveMode: merchant.live_mode, createdAt: at, payload: { ...record } });
    };
    if (!debit) {
      push(null);
      return resultOf(pa);
    }

    // The payer's side: its own intent (the same charge seen by who paid), `intent.paid`.
    const payerIntent = createIntent(ctx, {
      accountId: payer.id,
      liveMode: payer.live_mode,
      type: 'balance',
      status: 'paid',
      rawStatus: 'paid',
      legacyId: newId('ba'),
      amountInCents: checkout.amount_in_cents,
      currency: checkout.currency,
      customerId: null,
      checkoutId: checkout.id,
      details: balanceDetails({
        failure_reason: null,
        fee: 0,
        vat_withheld: 0,
        vat_withheld_currency: checkout.currency,
        payer_account_id: payer.id,
        merchant_account_id: merchant.id,
      }),
      paymentId: merchantDoc.payment.id,
      createdAt: at,
    });
    const link: BalancePaymentRow = {
      id: payerIntent.legacy_id,
      live_mode: pa.live_mode,
      payment_intent_id: paId,
      merchant_account_id: merchant.id,
      payer_account_id: payer.id,
      payer_intent_id: payerIntent.id,
      payer_balance_transaction_id: debit.id,
      amount_in_cents: checkout.amount_in_cents,
      currency: checkout.currency,
      created_at: at,
    };
    balancePaymentsStore(ctx.db).insert(link);
    ctx.outbox.emit({
      accountId: payer.id,
      liveMode: payer.live_mode,
      type: 'intent.paid',
      payload: intentDocument(ctx, payerIntent.id)!,
      objectId: payerIntent.id,
    });
    ctx.registry.checkout.afterPay(ctx, merchant, settled, { paymentIntentId: paId, card: null, paymentMethodId: pa.payment_method_id });
    push({
      balance_payment: link,
      intent: { id: payerIntent.id, payment_id: payerIntent.payment_id, created_at: payerIntent.created_at },
      balance_transaction: { ...debit, account_id: payer.id },
    });
    return resultOf(pa);
  });
}

/** The payer's side of a balance payment (refunds give the money back to it), or undefined for any other payment. */
export function balancePaymentOf(ctx: AppContext, paymentIntentId: string): BalancePaymentRow | undefined {
  return balancePaymentsStore(ctx.db).byPaymentIntent(paymentIntentId);
}
