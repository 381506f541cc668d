import { setup } from 'xstate';

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
