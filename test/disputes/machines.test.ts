import { describe, expect, it } from 'vitest';
import { initialState, isFinalState, nextState } from '../../src/lifecycle.js';
import { disputeMachine, disputeStep } from '../../src/modules/disputes/machine.js';
import { peerTransferMachine, reviewStep } from '../../src/modules/transfers/machine.js';

describe('dispute machine', () => {
  it('opens needs_response and allows exactly the moves of the lifecycle', () => {
    expect(initialState(disputeMachine)).toBe('needs_response');
    expect(nextState(disputeMachine, 'needs_response', { type: 'submit_evidence' })).toBe('under_review');
    expect(nextState(disputeMachine, 'needs_response', { type: 'win' })).toBe('won');
    expect(nextState(disputeMachine, 'needs_response', { type: 'lose' })).toBe('lost');
    expect(nextState(disputeMachine, 'under_review', { type: 'submit_evidence' })).toBeNull();
    expect(nextState(disputeMachine, 'under_review', { type: 'win' })).toBe('won');
    expect(nextState(disputeMachine, 'under_review', { type: 'lose' })).toBe('lost');
    for (const e of ['submit_evidence', 'win', 'lose'] as const) {
      expect(nextState(disputeMachine, 'won', { type: e })).toBeNull();
      expect(nextState(disputeMachine, 'lost', { type: e })).toBeNull();
    }
    expect([isFinalState(disputeMachine, 'won'), isFinalState(disputeMachine, 'lost'), isFinalState(disputeMachine, 'under_review')]).toEqual([
      true,
      true,
      false,
    ]);
    expect(disputeStep('under_review', 'under_review')).toBeNull();
    expect(disputeStep('needs_response', 'won')).toEqual({ type: 'win' });
  });
});

describe('peer transfer machine', () => {
  it('evaluates (pending), then approves or holds; a held transfer is released or cancelled once', () => {
    expect(initialState(peerTransferMachine)).toBe('pending');
    expect(nextState(peerTransferMachine, 'pending', { type: 'approve' })).toBe('succeeded');
    expect(nextState(peerTransferMachine, 'pending', { type: 'review' })).toBe('in_review');
    expect(nextState(peerTransferMachine, 'in_review', { type: 'release' })).toBe('succeeded');
    expect(nextState(peerTransferMachine, 'in_review', { type: 'cancel' })).toBe('cancelled');
    expect(nextState(peerTransferMachine, 'in_review', { type: 'approve' })).toBeNull();
    expect(reviewStep('succeeded', 'cancelled')).toBeNull();
    expect(reviewStep('cancelled', 'succeeded')).toBeNull();
    expect(reviewStep('in_review', 'succeeded')).toEqual({ type: 'release' });
    expect(isFinalState(peerTransferMachine, 'succeeded')).toBe(true);
    expect(isFinalState(peerTransferMachine, 'cancelled')).toBe(true);
  });
});
