import { setup } from 'xstate';

export type SwapStatus = 'pending' | 'completed' | 'failed';
export type SwapEvent = { type: 'COMPLETE' } | { type: 'FAIL' };

/**
 * A swap's lifecycle, the one place its moves are written: created `pending` (the source balance is
 * already debited), then the exchange confirms it (`completed`: the USDC, or the dollars, are
 * credited) or refuses it (`failed`: the source amount comes back). Both ends are final.
 */
export const swapMachine = setup({ types: { events: {} as SwapEvent } }).createMachine({
  id: 'swap',
  initial: 'pending',
  states: {
    pending: { on: { COMPLETE: 'completed', FAIL: 'failed' } },
    completed: { type: 'final' },
    failed: { type: 'final' },
  },
});
