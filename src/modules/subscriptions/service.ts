import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { newId } from '../../ids.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { subscriptionRecord } from './sync.js';
import { accountsOf, type AccountsService, type Account } from '../../accounts/service.js';
import { createCheckout } from '../checkouts/service.js';
import { settleCheckoutPayment } from '../payments/service.js';
import { getCustomer } from '../customers/service.js';
import { getPrice, getProduct } from '../products/service.js';
import { setupIntentEventPayload, subscriptionEventPayload } from './document.js';
import { initialState, nextState } from '../../lifecycle.js';
import { answeredStatus, eventsFor, subscriptionMachine, type SubscriptionEvent } from './machine.js';
import type { CreateTrialSubscriptionBody } from './schema.js';
import { addInterval } from './periods.js';
import { SubscriptionsStore, type SubscriptionRow } from './store.js';

const DAY_MS = 86_400_000;
const later = (a: string, b: string) => (a > b ? a : b);

export class SubscriptionsService {
  readonly store: SubscriptionsStore;
  private readonly accounts: AccountsService;

  constructor(private readonly ctx: AppContext) {
    this.store = new SubscriptionsStore(ctx.db);
    this.accounts = accountsOf(ctx);
  }

  private now(): string {
    return isoTime(this.ctx.clock.now());
  }

  find(accountIds: string[], liveMode: boolean, id: string): SubscriptionRow {
    const r = this.store.get(id);
    if (!r || !accountIds.includes(r.account_id) || (r.live_mode === 1) !== liveMode) throw notFound('subscription', id);
    return r;
  }

  /**
   * Takes one machine transition: refuses what the machine refuses (422), saves under the row's
   * version, and emits the transition's event in the same transaction. A stale row (another writer
   * got there first) is refused too, so no event is ever emitted twice.
   */
  private apply(sub: SubscriptionRow, event: SubscriptionEvent, patch: Partial<SubscriptionRow>, extra: Record<string, unknown> = {}): SubscriptionRow {
    const to = nextState(subscriptionMachine, sub.status, event);
    if (!to) {
      if (event.type === 'REACTIVATE' && sub.status === 'canceled')
        throw new ApiError('reactivation_period_over', { extra: { status: answeredStatus(sub.status) } });
      throw new ApiError('subscription_transition_invalid', {
        message: `A ${answeredStatus(sub.status)} subscription cannot take ${event.type.toLowerCase()}.`,
        extra: { status: answeredStatus(sub.status) },
      });
    }
    const at = this.now();
    const next: SubscriptionRow = { ...sub, ...patch, status: to, updated_at: at };
    if (!this.store.save(next))
      throw new ApiError('subscription_transition_invalid', {
        message: 'The subscription changed meanwhile; read it again.',
        extra: { status: answeredStatus(sub.status) },
      });
    const saved = this.store.get(sub.id)!;
    for (const type of eventsFor(sub.status, to, event)) {
      const setup = type.startsWith('setup_intent.');
      this.ctx.outbox.emit({
        accountId: sub.account_id,
        liveMode: sub.live_mode === 1,
        type,
        objectId: setup ? saved.setup_intent_id! : sub.id,
        payload: setup ? setupIntentEventPayload(saved, type, at, extra) : subscriptionEventPayload(saved, type, at, extra),
      });
    }
    if (sub.status !== to) {
      appendSyncRecord(this.ctx.db, {
        kind: 'subscription',
        accountId: sub.account_id,
        liveMode: sub.live_mode === 1,
        createdAt: at,
        payload: subscriptionRecord(this.store, saved),
      });
    }
    return saved;
  }

  /**
   * Spec 6.2 `setup_intent.succeeded`: a subscription to a price with a free trial starts with the
   * card kept and nothing charged; the first charge is due when the trial ends. Prices without a
   * trial are bought through a checkout instead (422 `price_has_no_trial`).
   */
  startTrial(account: Account, body: CreateTrialSubscriptionBody): SubscriptionRow {
    return tx(this.ctx.db, () => {
      const found = getPrice(this.ctx, account, body.price_id);
      if (!found) throw invalid({ price_id: 'does not exist' });
      const { price, product } = found;
      if (product.status !== 'active') throw invalid({ price_id: 'belongs to an archived product' });
      if (price.charge_type !== 'recurring' || !price.free_trial_interval) throw new ApiError('price_has_no_trial');
      if (body.customer_id && !getCustomer(this.ctx, account, body.customer_id)) throw invalid({ customer_id: 'does not exist' });
      const at = this.now();
      const interval = (price.billing_interval ?? 'month') as SubscriptionRow['billing_interval'];
      const trialEnd = addInterval(at, price.free_trial_interval as SubscriptionRow['billing_interval'], price.free_trial_interval_count ?? 1);
      const setupIntentId = newId('si');
      const row: SubscriptionRow = {
        id: newId('su'),
        account_id: account.id,
        live_mode: account.live_mode ? 1 : 0,
        customer_id: body.customer_id ?? null,
        product_id: product.id,
        price_id: price.id,
        amount_in_cents: price.amount_in_cents * (body.quantity ?? 1),
        currency: price.currency,
        billing_interval: interval,
        billing_interval_count: price.billing_interval_count ?? 1,
        status: initialState(subscriptionMachine),
        // The trial is the first period: the biller charges when it ends, like any renewal.
        current_period_start: at,
        current_period_end: trialEnd,
        failed_attempts: 0,
        first_failure_at: null,
        next_retry_at: null,
        paused_at: null,
        canceled_at: null,
        cancel_reason: null,
        // No checkout was paid: the setup intent stands as the origin (unique per subscription).
        origin_checkout_id: setupIntentId,
        latest_checkout_id: null,
        card_network: body.card.network ?? null,
        card_last4: body.card.last4,
        sandbox_outcome: 'succeeded',
        trial_end: trialEnd,
        setup_intent_id: setupIntentId,
        periods_paid: 0,
        cancel_after_periods: price.periods_before_automatic_cancellation ?? null,
        minimum_periods: price.periods_before_allowed_to_cancel ?? null,
        payment_method_id: newId('pay_m'),
        version: 0,
        created_at: at,
        updated_at: at,
      };
      this.store.insert(row);
      const saved = this.store.get(row.id)!;
      this.ctx.outbox.emit({
        accountId: account.id,
        liveMode: account.live_mode,
        type: 'setup_intent.succeeded',
        objectId: setupIntentId,
        payload: setupIntentEventPayload(saved, 'setup_intent.succeeded', at),
      });
      appendSyncRecord(this.ctx.db, {
        kind: 'subscription',
        accountId: account.id,
        liveMode: account.live_mode,
        createdAt: at,
        payload: subscriptionRecord(this.store, saved),
      });
      return saved;
    });
  }

  pause(account: Account, id: string): SubscriptionRow {
    return tx(this.ctx.db, () => this.apply(this.find([account.id], account.live_mode, id), { type: 'PAUSE' }, { paused_at: this.now() }));
  }

  /** `{act: "unpause"}`: only a paused subscription resumes (a canceled one is reactivated with `status: active`). */
  resume(account: Account, id: string): SubscriptionRow {
    return tx(this.ctx.db, () => {
      const sub = this.find([account.id], account.live_mode, id);
      return this.apply(sub, { type: 'RESUME' }, { paused_at: null, current_period_end: later(sub.current_period_end, this.now()) });
    });
  }

  /** From paused: resume; from canceled: reactivate within the allowed period. */
  activate(account: Account, id: string): SubscriptionRow {
    return tx(this.ctx.db, () => {
      const sub = this.find([account.id], account.live_mode, id);
      const now = this.now();
      if (sub.status === 'canceled') {
        const days = this.ctx.config.subscriptions.reactivation_days;
        const withinPeriod = sub.canceled_at !== null && this.ctx.clock.now() - Date.parse(sub.canceled_at) <= days * DAY_MS;
        // A paid period that has not ended is honoured; otherwise the next charge is due now.
        return this.apply(
          sub,
          { type: 'REACTIVATE', withinPeriod },
          {
            canceled_at: null,
            cancel_reason: null,
            failed_attempts: 0,
            first_failure_at: null,
            next_retry_at: null,
            current_period_end: later(sub.current_period_end, now),
          },
        );
      }
      return this.apply(sub, { type: 'RESUME' }, { paused_at: null, current_period_end: later(sub.current_period_end, now) });
    });
  }

  /** DELETE: cancel now; a canceled subscription, or one that never started, answers as it is (idempotent, no second event). */
  cancel(account: Account, id: string): SubscriptionRow {
    return tx(this.ctx.db, () => {
      const sub = this.find([account.id], account.live_mode, id);
      if (sub.status === 'canceled' || sub.status === 'unable_to_start') return sub;
      if (sub.minimum_periods !== null && sub.periods_paid < sub.minimum_periods) {
        throw new ApiError('subscription_minimum_term', {
          message: `The subscription can be canceled once ${sub.minimum_periods} periods are paid; ${sub.periods_paid} are.`,
          extra: { status: answeredStatus(sub.status), periods_paid: sub.periods_paid, periods_before_allowed_to_cancel: sub.minimum_periods },
        });
      }
      return this.apply(
        sub,
        { type: 'CANCEL' },
        { canceled_at: this.now(), cancel_reason: 'requested', next_retry_at: null },
        { reason: 'requested', failure_reason: null },
      );
    });
  }

  /**
   * Charges the card on file now: the renewal of an active subscription (the next period) or the
   * retry of a past-due one. The charge is a real checkout settled through the payments service, so
   * it has its intent, ledger row and events; the subscription's transition joins the same
   * transaction. `outcome` is what the sandbox card on file answers.
   */
  /**
   * Hosted `periods_before_automatic_cancellation`: an active subscription whose paid periods are
   * all used up ends when the last one does, instead of being charged again. The cancel is the
   * machine's CANCEL, as a requested one, with `cancel_reason`/`reason: automatic_cancellation`.
   * Returns null when the subscription goes on.
   */
  endIfComplete(sub: SubscriptionRow): SubscriptionRow | null {
    return tx(this.ctx.db, () => {
      const fresh = this.store.get(sub.id)!;
      if (fresh.status !== 'active' || fresh.cancel_after_periods === null || fresh.periods_paid < fresh.cancel_after_periods) return null;
      if (fresh.current_period_end > this.now()) return null;
      return this.autoCancel(fresh);
    });
  }

  private autoCancel(sub: SubscriptionRow): SubscriptionRow {
    const reason = 'automatic_cancellation';
    return this.apply(sub, { type: 'CANCEL' }, { canceled_at: this.now(), cancel_reason: reason, next_retry_at: null }, { reason, failure_reason: null });
  }

  bill(sub: SubscriptionRow, outcome: 'succeeded' | 'failed', failureReason = 'card_declined'): SubscriptionRow {
    return tx(this.ctx.db, () => {
      const fresh = this.store.get(sub.id)!;
      if (fresh.status !== 'active' && fresh.status !== 'past_due') {
        throw new ApiError('subscription_transition_invalid', {
          message: `A ${answeredStatus(fresh.status)} subscription is not billed.`,
          extra: { status: answeredStatus(fresh.status) },
        });
      }
      const account = this.accounts.account(fresh.account_id)!;
      const product = getProduct(this.ctx, account, fresh.product_id);
      const invoiceItems = this.store.pendingInvoiceItems(fresh.id);
      const checkout = createCheckout(this.ctx, account, {
        // The subscription's own price, every added recurring item, and the one-time charges waiting for this renewal.
        items: [
          {
            name: product?.name ?? 'Subscription',
            amount_in_cents: fresh.amount_in_cents,
            currency: fresh.currency,
            quantity: 1,
            tax_category: product?.tax_category,
          },
          ...this.store
            .items(fresh.id)
            .map((i) => ({ name: i.name, amount_in_cents: i.amount_in_cents, currency: fresh.currency, quantity: i.quantity, tax_category: i.tax_category })),
          ...invoiceItems.map((i) => ({ name: i.description, amount_in_cents: i.amount_in_cents, currency: fresh.currency, quantity: 1 })),
        ],
        currency: fresh.currency,
        customer_id: fresh.customer_id,
        metadata: { subscription_id: fresh.id, period_start: fresh.current_period_end },
      });
      settleCheckoutPayment(this.ctx, account, {
        checkoutId: checkout.id,
        method: 'card',
        outcome,
        failureReason: outcome === 'failed' ? failureReason : null,
        card: fresh.card_last4 ? { network: fresh.card_network ?? 'card', last4: fresh.card_last4 } : null,
        channel: 'subscription',
        paymentMethodId: fresh.payment_method_id,
      });
      const linked = { ...fresh, latest_checkout_id: checkout.id };
      if (outcome === 'succeeded') {
        // Paid once: a failed charge leaves them pending for the retry.
        if (invoiceItems.length) this.store.markInvoiceItemsBilled(fresh.id, checkout.id);
        const start = fresh.current_period_end;
        return this.apply(
          linked,
          { type: 'CHARGE_SUCCEEDED' },
          {
            current_period_start: start,
            current_period_end: addInterval(start, fresh.billing_interval, fresh.billing_interval_count),
            failed_attempts: 0,
            first_failure_at: null,
            next_retry_at: null,
            trial_end: null,
            periods_paid: fresh.periods_paid + 1,
          },
        );
      }
      if (fresh.trial_end !== null) {
        // The first charge after a free trial failed: no retries; the setup intent ends and the subscription never started (`unable_to_start`).
        return this.apply(
          linked,
          { type: 'CHARGE_FAILED', finalAttempt: true, trial: true },
          { failed_attempts: 1, first_failure_at: this.now(), next_retry_at: null, canceled_at: this.now(), cancel_reason: 'trial_payment_failed' },
          { reason: 'trial_payment_failed', failure_reason: failureReason },
        );
      }
      const retryDays = this.ctx.config.subscriptions.retry_days;
      const attempts = fresh.failed_attempts + 1;
      const first = fresh.first_failure_at ?? this.now();
      const finalAttempt = attempts > retryDays.length;
      return this.apply(
        linked,
        { type: 'CHARGE_FAILED', finalAttempt },
        {
          failed_attempts: attempts,
          first_failure_at: first,
          next_retry_at: finalAttempt ? null : isoTime(Date.parse(first) + retryDays[attempts - 1] * DAY_MS),
          ...(finalAttempt ? { canceled_at: this.now(), cancel_reason: 'payment_failed' } : {}),
        },
        // Every cancel carries both fields, whichever path ended it, so receivers parse one shape.
        finalAttempt ? { reason: 'payment_failed', failure_reason: failureReason } : { failure_reason: failureReason },
      );
    });
  }

  /**
   * Bills everything due at `ctx.clock` (renewals and retries). Sandbox subscriptions charge their
   * sandbox card on file; live ones need a card processor posd does not have, so they are left due
   * (see docs/subscriptions.md) rather than failed.
   */
  runDue(): number {
    let billed = 0;
    for (const sub of this.store.due(this.now())) {
      if (sub.live_mode === 1 && !(sub.cancel_after_periods !== null && sub.periods_paid >= sub.cancel_after_periods)) continue;
      try {
        // Its last paid period has ended: it ends (live ones too: no charge is involved).
        if (this.endIfComplete(sub)) continue;
        this.bill(sub, sub.sandbox_outcome);
        billed++;
      } catch (err) {
        this.ctx.log.error({ err, subscription: sub.id }, 'subscription billing failed');
      }
    }
    return billed;
  }

  /** Sandbox helper: sets what the card on file answers from now on, then bills the next period (or the retry) now. */
  advance(account: Account, id: string, outcome: 'succeeded' | 'failed', failureReason?: string): SubscriptionRow {
    return tx(this.ctx.db, () => {
      const sub = this.find([account.id], account.live_mode, id);
      if (sub.status !== 'active' && sub.status !== 'past_due') {
        throw new ApiError('subscription_transition_invalid', {
          message: `A ${answeredStatus(sub.status)} subscription is not billed.`,
          extra: { status: answeredStatus(sub.status) },
        });
      }
      if (!this.store.save({ ...sub, sandbox_outcome: outcome }))
        throw new ApiError('subscription_transition_invalid', { extra: { status: answeredStatus(sub.status) } });
      // The helper bills "the next period now": when no period is left to bill, the subscription ends instead.
      if (sub.status === 'active' && sub.cancel_after_periods !== null && sub.periods_paid >= sub.cancel_after_periods) {
        return this.autoCancel(this.store.get(id)!);
      }
      return this.bill(this.store.get(id)!, outcome, failureReason);
    });
  }
}

export { addInterval } from './periods.js';
