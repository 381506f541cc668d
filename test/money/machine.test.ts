import { describe, expect, it } from 'vitest';
import { nextState } from '../../src/lifecycle.js';
import { checkoutMachine } from '../../src/modules/checkouts/machine.js';

describe('checkout machine', () => {
  it('settles an unpaid checkout once', () => {
    expect(nextState(checkoutMachine, 'unpaid', { type: 'PAYMENT_SUCCEEDED' })).toBe('paid');
    expect(nextState(checkoutMachine, 'unpaid', { type: 'PAYMENT_FAILED' })).toBe('failed');
    expect(nextState(checkoutMachine, 'payment_in_progress', { type: 'PAYMENT_SUCCEEDED' })).toBe('paid');
    expect(nextState(checkoutMachine, 'paid', { type: 'PAYMENT_FAILED' })).toBeNull();
    expect(nextState(checkoutMachine, 'failed', { type: 'PAYMENT_SUCCEEDED' })).toBeNull();
    expect(nextState(checkoutMachine, 'paid', { type: 'START_PAYMENT' })).toBeNull();
  });
});
