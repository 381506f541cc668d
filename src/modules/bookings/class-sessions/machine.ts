import { setup, transition } from 'xstate';

export type ClassSessionState = 'scheduled' | 'cancelled';

/**
 * A class session's lifecycle (spec 3.4): scheduled until the business cancels it. That it has
 * started is a matter of the clock, checked by the service, not a state.
 */
export const classSessionMachine = setup({
  types: { events: {} as { type: 'CANCEL' } },
}).createMachine({
  id: 'class_session',
  initial: 'scheduled',
  states: {
    scheduled: { on: { CANCEL: 'cancelled' } },
    cancelled: { type: 'final' },
  },
});

export function sessionState(cancelledAt: string | null): ClassSessionState {
  return cancelledAt ? 'cancelled' : 'scheduled';
}

/** The state after CANCEL, or null when a session in `from` cannot be cancelled. */
export function cancelTransition(from: ClassSessionState): ClassSessionState | null {
  const snapshot = classSessionMachine.resolveState({ value: from, context: {} });
  if (!snapshot.can({ type: 'CANCEL' })) return null;
  return transition(classSessionMachine, snapshot, { type: 'CANCEL' })[0].value as ClassSessionState;
}
