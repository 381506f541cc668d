import { setup } from 'xstate';

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
