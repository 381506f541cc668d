import { setup } from 'xstate';
import { nextState } from '../../lifecycle.js';

export type DisputeStatus = 'needs_response' | 'under_review' | 'won' | 'lost';

export type DisputeEvent = { type: 'submit_evidence' } | { type: 'win' } | { type: 'lose' };

/**
 * A dispute's (chargeback's) lifecycle, the one place its moves are written. The card network opens
 * it `needs_response` (the disputed amount is held back from the balance); the merchant's evidence
 * puts it `under_review`; the network decides `won` (the money comes back) or `lost` (it stays
 * debited). The network may decide without evidence (the cardholder withdraws: `won`; no answer in
 * time or the merchant accepts: `lost`). `won` and `lost` are final.
 */
export const disputeMachine = setup({
  types: { events: {} as DisputeEvent },
}).createMachine({
  id: 'dispute',
  initial: 'needs_response',
  states: {
    needs_response: { on: { submit_evidence: 'under_review', win: 'won', lose: 'lost' } },
    under_review: { on: { win: 'won', lose: 'lost' } },
    won: { type: 'final' },
    lost: { type: 'final' },
  },
});

export type DisputeOutcome = 'under_review' | 'won' | 'lost';

const EVENT_TO: Record<DisputeOutcome, DisputeEvent> = {
  under_review: { type: 'submit_evidence' },
  won: { type: 'win' },
  lost: { type: 'lose' },
};

/** The machine's event that takes a dispute from `status` to `outcome` in one move, or null when it cannot. */
export function disputeStep(status: DisputeStatus, outcome: DisputeOutcome): DisputeEvent | null {
  const event = EVENT_TO[outcome];
  return nextState(disputeMachine, status, event) === outcome ? event : null;
}
