import { describe, expect, it } from 'vitest';
import { isFinalWithdrawalStatus, nextWithdrawalStatus, pathTo } from '../../src/modules/transfers/machine.js';

describe('withdrawal machine', () => {
  it('allows exactly the moves of the lifecycle', () => {
    expect(nextWithdrawalStatus('pending', { type: 'dispatch' })).toBe('in_transit');
    expect(nextWithdrawalStatus('pending', { type: 'fail' })).toBe('failed');
    expect(nextWithdrawalStatus('pending', { type: 'pay' })).toBeNull();
    expect(nextWithdrawalStatus('in_transit', { type: 'pay' })).toBe('paid');
    expect(nextWithdrawalStatus('in_transit', { type: 'fail' })).toBe('failed');
    expect(nextWithdrawalStatus('in_transit', { type: 'dispatch' })).toBeNull();
    for (const e of ['dispatch', 'pay', 'fail'] as const) {
      expect(nextWithdrawalStatus('paid', { type: e })).toBeNull();
      expect(nextWithdrawalStatus('failed', { type: e })).toBeNull();
    }
  });

  it('knows final states and plans a path to an outcome', () => {
    expect(isFinalWithdrawalStatus('paid')).toBe(true);
    expect(isFinalWithdrawalStatus('failed')).toBe(true);
    expect(isFinalWithdrawalStatus('pending')).toBe(false);
    expect(pathTo('pending', 'paid')).toEqual([{ type: 'dispatch' }, { type: 'pay' }]);
    expect(pathTo('in_transit', 'paid')).toEqual([{ type: 'pay' }]);
    expect(pathTo('pending', 'failed')).toEqual([{ type: 'fail' }]);
    expect(pathTo('in_transit', 'in_transit')).toBeNull();
    expect(pathTo('paid', 'failed')).toBeNull();
  });
});
