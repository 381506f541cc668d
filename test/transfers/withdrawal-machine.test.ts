import { describe, expect, it } from 'vitest';
import { isFinalState, nextState } from '../../src/lifecycle.js';
import { pathTo, withdrawalMachine } from '../../src/modules/transfers/machine.js';

describe('withdrawal machine', () => {
  it('allows exactly the moves of the lifecycle', () => {
    expect(nextState(withdrawalMachine, 'pending', { type: 'dispatch' })).toBe('in_transit');
    expect(nextState(withdrawalMachine, 'pending', { type: 'fail' })).toBe('failed');
    expect(nextState(withdrawalMachine, 'pending', { type: 'pay' })).toBeNull();
    expect(nextState(withdrawalMachine, 'in_transit', { type: 'pay' })).toBe('paid');
    expect(nextState(withdrawalMachine, 'in_transit', { type: 'fail' })).toBe('failed');
    expect(nextState(withdrawalMachine, 'in_transit', { type: 'dispatch' })).toBeNull();
    for (const e of ['dispatch', 'pay', 'fail'] as const) {
      expect(nextState(withdrawalMachine, 'paid', { type: e })).toBeNull();
      expect(nextState(withdrawalMachine, 'failed', { type: e })).toBeNull();
    }
  });

  it('knows final states and plans a path to an outcome', () => {
    expect(isFinalState(withdrawalMachine, 'paid')).toBe(true);
    expect(isFinalState(withdrawalMachine, 'failed')).toBe(true);
    expect(isFinalState(withdrawalMachine, 'pending')).toBe(false);
    expect(pathTo('pending', 'paid')).toEqual([{ type: 'dispatch' }, { type: 'pay' }]);
    expect(pathTo('in_transit', 'paid')).toEqual([{ type: 'pay' }]);
    expect(pathTo('pending', 'failed')).toEqual([{ type: 'fail' }]);
    expect(pathTo('in_transit', 'in_transit')).toBeNull();
    expect(pathTo('paid', 'failed')).toBeNull();
  });
});
