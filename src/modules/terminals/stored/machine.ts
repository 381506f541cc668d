import { setup } from 'xstate';
import { initialState, isFinalState, nextState, type StateOf } from '../../../lifecycle.js';

/**
 * The lifecycle of one stored (store-and-forward) card payment: the ONLY place its moves are
 * written. The terminal approved it offline (`stored`), later hands it to its processor
 * (`forwarded`, optional: a terminal may report the final outcome at once), and the processor's
 * answer makes it `approved` or `declined`; `expired` when it was not forwarded in time (the
 * terminal says so, or posd at its `forward_by` deadline). A final payment never moves again: a
 * second forward result is acknowledged and ignored, a contradicting one kept as `late_outcome`.
 */
export type StoredPaymentEvent = { type: 'FORWARDED' } | { type: 'APPROVED' } | { type: 'DECLINED' } | { type: 'EXPIRED' };

export const storedPaymentMachine = setup({
  types: { events: {} as StoredPaymentEvent },
}).createMachine({
  id: 'stored-payment',
  initial: 'stored',
  states: {
    stored: { on: { FORWARDED: 'forwarded', APPROVED: 'approved', DECLINED: 'declined', EXPIRED: 'expired' } },
    // Once forwarded the processor has it: its answer decides, and posd no longer expires it.
    forwarded: { on: { APPROVED: 'approved', DECLINED: 'declined', EXPIRED: 'expired' } },
    approved: { type: 'final' },
    declined: { type: 'final' },
    expired: { type: 'final' },
  },
});

export type StoredPaymentStatus = StateOf<typeof storedPaymentMachine>;

export const storedPaymentInitial = (): StoredPaymentStatus => initialState(storedPaymentMachine);
export const storedPaymentNext = (from: StoredPaymentStatus, event: StoredPaymentEvent) => nextState(storedPaymentMachine, from, event);
export const storedPaymentFinal = (status: StoredPaymentStatus) => isFinalState(storedPaymentMachine, status);

/** The machine event for a terminal's forward outcome. */
export function forwardEvent(outcome: 'forwarded' | 'approved' | 'declined' | 'expired'): StoredPaymentEvent {
  return { type: outcome.toUpperCase() as StoredPaymentEvent['type'] };
}
