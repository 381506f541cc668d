import { setup } from 'xstate';
import { nextState } from '../../lifecycle.js';

export type WithdrawalStatus = 'pending' | 'in_transit' | 'paid' | 'failed';

export type WithdrawalEvent = { type: 'dispatch' } | { type: 'pay' } | { type: 'fail' };

/**
 * A withdrawal's lifecycle, the one place its moves are written: the bank (or central, or the sandbox
 * test helper) dispatches it, then it is paid or it fails. It may also fail before leaving (a bank
 * that refuses the account at once). `paid` and `failed` are final; a failed withdrawal gives its
 * money back (the service posts that ledger row).
 */
export const withdrawalMachine = setup({
  types: { events: {} as WithdrawalEvent },
}).createMachine({
  id: 'withdrawal',
  initial: 'pending',
  states: {
    pending: { on: { dispatch: 'in_transit', fail: 'failed' } },
    in_transit: { on: { pay: 'paid', fail: 'failed' } },
    paid: { type: 'final' },
    failed: { type: 'final' },
  },
});

/**
 * The events that take a withdrawal from `status` to `outcome`, in order: reaching `paid` from
 * `pending` passes through `in_transit`. Null when the outcome cannot be reached.
 */
export function pathTo(status: WithdrawalStatus, outcome: 'in_transit' | 'paid' | 'failed'): WithdrawalEvent[] | null {
  const plans: Record<typeof outcome, WithdrawalEvent[][]> = {
    in_transit: [[{ type: 'dispatch' }]],
    paid: [[{ type: 'pay' }], [{ type: 'dispatch' }, { type: 'pay' }]],
    failed: [[{ type: 'fail' }]],
  };
  for (const plan of plans[outcome]) {
    let at: WithdrawalStatus | null = status;
    for (const e of plan) at = at && nextState(withdrawalMachine, at, e);
    if (at === outcome) return plan;
  }
  return null;
}

export type PeerTransferStatus = 'pending' | 'in_review' | 'succeeded' | 'cancelled';

export type PeerTransferEvent = { type: 'approve' } | { type: 'review' } | { type: 'release' } | { type: 'cancel' };

/**
 * A peer transfer's lifecycle. Every transfer starts `pending` (the automatic evaluation) inside the
 * transaction that creates it: one at or under `money.transfer_review_above_in_cents` is approved at
 * once (`succeeded`, the money moved); one above it goes to human review (`in_review`, the money
 * reserved: debited from the sender, not yet credited). The reviewer releases it (`succeeded`: the
 * recipient is credited) or cancels it (`cancelled`: the reservation returns to the sender). Only
 * `succeeded`, `in_review` and `cancelled` are ever stored; `succeeded` and `cancelled` are final.
 */
export const peerTransferMachine = setup({
  types: { events: {} as PeerTransferEvent },
}).createMachine({
  id: 'peer_transfer',
  initial: 'pending',
  states: {
    pending: { on: { approve: 'succeeded', review: 'in_review', cancel: 'cancelled' } },
    in_review: { on: { release: 'succeeded', cancel: 'cancelled' } },
    succeeded: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

/** The reviewer's decision that takes a transfer from `status` to `outcome`, or null when it cannot. */
export function reviewStep(status: PeerTransferStatus, outcome: 'succeeded' | 'cancelled'): PeerTransferEvent | null {
  const event: PeerTransferEvent = outcome === 'succeeded' ? { type: 'release' } : { type: 'cancel' };
  return nextState(peerTransferMachine, status, event) === outcome ? event : null;
}
