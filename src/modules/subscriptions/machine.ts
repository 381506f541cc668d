import { setup } from 'xstate';

/**
 * The machine's states: spec 3.5's, plus the hosted service's `unable_to_start` (hosted-api.md
 * section 7: the first charge failed). Stored as named here; `answeredStatus` gives the hosted
 * spelling the API and event payloads answer.
 */
export type SubscriptionStatus = 'active' | 'past_due' | 'paused' | 'canceled' | 'unable_to_start';

/** What a subscription's status is answered as: the hosted service spells the canceled state `cancelled` (docs/compatibility.md). */
export type AnsweredSubscriptionStatus = Exclude<SubscriptionStatus, 'canceled'> | 'cancelled';
export function answeredStatus(status: SubscriptionStatus): AnsweredSubscriptionStatus {
  return status === 'canceled' ? 'cancelled' : status;
}
/** A status filter value (hosted spelling, or the spec's `canceled`) as stored. */
export function storedStatus(status: AnsweredSubscriptionStatus | 'canceled'): SubscriptionStatus {
  return status === 'cancelled' ? 'canceled' : status;
}
export type SubscriptionEvent =
  | { type: 'CHARGE_SUCCEEDED' }
  /** `finalAttempt`: the charge that failed was the last retry (spec 3.5: third failure). */
  | { type: 'CHARGE_FAILED'; finalAttempt: boolean; trial?: boolean }
  | { type: 'PAUSE' }
  | { type: 'RESUME' }
  | { type: 'CANCEL' }
  /** `withinPeriod`: canceled less than `subscriptions.reactivation_days` ago. */
  | { type: 'REACTIVATE'; withinPeriod: boolean };

/**
 * Spec 3.5, the one place subscription transitions are written. Each transition names the event it
 * emits (`emits` in meta): the service emits exactly the events of the transitions it takes.
 */
export const subscriptionMachine = setup({
  types: { events: {} as SubscriptionEvent },
  guards: {
    finalAttempt: ({ event }) => event.type === 'CHARGE_FAILED' && event.finalAttempt,
    /** The first charge after a free trial failed: the card never paid, so no retries: hosted `unable_to_start` (spec 6.2 setup_intent.cancelled). */
    trialChargeFailed: ({ event }) => event.type === 'CHARGE_FAILED' && event.trial === true,
    withinPeriod: ({ event }) => event.type === 'REACTIVATE' && event.withinPeriod,
  },
}).createMachine({
  id: 'subscription',
  initial: 'active',
  states: {
    active: {
      on: {
        CHARGE_SUCCEEDED: 'active',
        CHARGE_FAILED: [{ guard: 'trialChargeFailed', target: 'unable_to_start' }, { target: 'past_due' }],
        PAUSE: 'paused',
        CANCEL: 'canceled',
      },
    },
    past_due: {
      on: {
        CHARGE_SUCCEEDED: 'active',
        CHARGE_FAILED: [{ guard: 'finalAttempt', target: 'canceled' }, { target: 'past_due' }],
        CANCEL: 'canceled',
      },
    },
    paused: { on: { RESUME: 'active', CANCEL: 'canceled' } },
    canceled: { on: { REACTIVATE: { guard: 'withinPeriod', target: 'active' } } },
    /** Never started (no period was ever paid): nothing moves it, not even a reactivation. */
    unable_to_start: { type: 'final' },
  },
});

/**
 * Spec 6.2: the events a transition emits, in order (a retry that fails again and a recovery emit
 * none). A failed first charge after a trial (`unable_to_start`) cancels the card's setup intent
 * (the catalogue's `setup_intent.cancelled`) and ends the subscription (`subscription.cancel`, the
 * event the official plugin ends its subscription on).
 */
export function eventsFor(from: SubscriptionStatus, to: SubscriptionStatus, event: SubscriptionEvent): string[] {
  if (from === 'active' && to === 'unable_to_start') return ['setup_intent.cancelled', 'subscription.cancel'];
  const one = eventFor(from, to, event);
  return one ? [one] : [];
}

function eventFor(from: SubscriptionStatus, to: SubscriptionStatus, event: SubscriptionEvent): string | null {
  if (from === 'active' && to === 'past_due') return 'subscription.past_due';
  if (to === 'canceled' && from !== 'canceled') return 'subscription.cancel';
  if (from === 'active' && to === 'paused') return 'subscription.pause';
  if (from === 'paused' && to === 'active') return 'subscription.unpause';
  if (from === 'canceled' && to === 'active' && event.type === 'REACTIVATE') return 'subscription.reactivate';
  return null;
}
