import { describe, expect, it } from 'vitest';
import { initialState, isFinalState, nextState } from '../src/lifecycle.js';
import { checkoutMachine } from '../src/modules/checkouts/machine.js';
import { verificationMachine } from '../src/modules/connected/machine.js';
import { subscriptionMachine } from '../src/modules/subscriptions/machine.js';

describe('src/lifecycle.ts', () => {
  it('starts a row in the machine’s own initial state', () => {
    expect(initialState(checkoutMachine)).toBe('unpaid');
    expect(initialState(subscriptionMachine)).toBe('active');
    expect(initialState(verificationMachine)).toBe('unverified');
  });

  it('evaluates guards with the event: a failed charge is retried, the last one cancels', () => {
    expect(nextState(subscriptionMachine, 'past_due', { type: 'CHARGE_FAILED', finalAttempt: false })).toBe('past_due');
    expect(nextState(subscriptionMachine, 'past_due', { type: 'CHARGE_FAILED', finalAttempt: true })).toBe('canceled');
    expect(nextState(subscriptionMachine, 'canceled', { type: 'REACTIVATE', withinPeriod: false })).toBeNull();
    expect(nextState(subscriptionMachine, 'canceled', { type: 'REACTIVATE', withinPeriod: true })).toBe('active');
    // A trial's first charge failing: the hosted `unable_to_start`, where nothing moves it.
    expect(nextState(subscriptionMachine, 'active', { type: 'CHARGE_FAILED', finalAttempt: true, trial: true })).toBe('unable_to_start');
    expect(nextState(subscriptionMachine, 'active', { type: 'CHARGE_FAILED', finalAttempt: false })).toBe('past_due');
    expect(isFinalState(subscriptionMachine, 'unable_to_start')).toBe(true);
    expect(nextState(subscriptionMachine, 'unable_to_start', { type: 'REACTIVATE', withinPeriod: true })).toBeNull();
  });

  it('takes transitions written on the root as well as on a state', () => {
    expect(nextState(verificationMachine, 'verified', { type: 'DOCUMENTS_REJECTED' })).toBe('rejected');
  });

  it('knows final states, where every event is refused', () => {
    expect(isFinalState(checkoutMachine, 'paid')).toBe(true);
    expect(isFinalState(checkoutMachine, 'unpaid')).toBe(false);
    expect(nextState(checkoutMachine, 'paid', { type: 'PAYMENT_FAILED' })).toBeNull();
  });

  it('answers a type-only event from memory, and asks the guards again for an event with data', () => {
    // A type-only CHARGE_FAILED is not a final attempt: its answer is remembered for that type...
    expect(nextState(subscriptionMachine, 'past_due', { type: 'CHARGE_FAILED' } as never)).toBe('past_due');
    expect(nextState(subscriptionMachine, 'past_due', { type: 'CHARGE_FAILED' } as never)).toBe('past_due');
    // ...and never given to the same type carrying data its guard reads.
    expect(nextState(subscriptionMachine, 'past_due', { type: 'CHARGE_FAILED', finalAttempt: true })).toBe('canceled');
    // A refusal is remembered as a refusal, and the initial state stays the machine's.
    expect(nextState(checkoutMachine, 'paid', { type: 'PAYMENT_FAILED' })).toBeNull();
    expect(nextState(checkoutMachine, 'paid', { type: 'PAYMENT_FAILED' })).toBeNull();
    expect(initialState(checkoutMachine)).toBe('unpaid');
    expect(initialState(checkoutMachine)).toBe('unpaid');
  });
});
