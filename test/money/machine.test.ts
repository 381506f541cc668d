import { describe, expect, it } from 'vitest';
import { nextCheckoutStatus } from '../../src/modules/checkouts/machine.js';

describe('checkout machine', () => {
  it('settles an unpaid checkout once', () => {
    expect(nextCheckoutStatus('unpaid', { type: 'PAYMENT_SUCCEEDED' })).toBe('paid');
    expect(nextCheckoutStatus('unpaid', { type: 'PAYMENT_FAILED' })).toBe('failed');
    expect(nextCheckoutStatus('payment_in_progress', { type: 'PAYMENT_SUCCEEDED' })).toBe('paid');
    expect(nextCheckoutStatus('paid', { type: 'PAYMENT_FAILED' })).toBeNull();
    expect(nextCheckoutStatus('failed', { type: 'PAYMENT_SUCCEEDED' })).toBeNull();
    expect(nextCheckoutStatus('paid', { type: 'START_PAYMENT' })).toBeNull();
  });
});
