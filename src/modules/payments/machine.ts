import { setup } from 'xstate';

export type PaymentStatus = 'pending' | 'succeeded' | 'failed' | 'canceled';
export type PaymentEvent = { type: 'SUCCEED' } | { type: 'FAIL' } | { type: 'CANCEL' };

/**
 * A payment intent's lifecycle, the one place its moves are written. A card or terminal payment is
 * settled by the processor before posd records it, so it is written straight in the state one move
 * from `pending` gives. A bank transfer waits in `pending` until the money arrives: all of it
 * (`succeeded`), short (`failed`), or never, when the payer gives up (`canceled`).
 */
export const paymentMachine = setup({ types: { events: {} as PaymentEvent } }).createMachine({
  id: 'payment',
  initial: 'pending',
  states: {
    pending: { on: { SUCCEED: 'succeeded', FAIL: 'failed', CANCEL: 'canceled' } },
    succeeded: { type: 'final' },
    failed: { type: 'final' },
    canceled: { type: 'final' },
  },
});
