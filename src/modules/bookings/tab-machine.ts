import { setup, transition } from 'xstate';

export type TabStatus = 'open' | 'closed';

/** A stay's service tab: open from check-in, closed into one checkout. */
export const serviceTabMachine = setup({
  types: { events: {} as { type: 'ADD_ITEM' } | { type: 'CLOSE' } },
}).createMachine({
  id: 'service_tab',
  initial: 'open',
  states: {
    open: { on: { ADD_ITEM: 'open', CLOSE: 'closed' } },
    closed: { type: 'final' },
  },
});

export function nextTabStatus(from: TabStatus, event: 'ADD_ITEM' | 'CLOSE'): TabStatus | null {
  const snapshot = serviceTabMachine.resolveState({ value: from, context: {} });
  if (!snapshot.can({ type: event })) return null;
  return transition(serviceTabMachine, snapshot, { type: event })[0].value as TabStatus;
}
