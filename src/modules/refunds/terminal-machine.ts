import { setup } from 'xstate';
import type { TerminalRefundStatus } from './store.js';

export type TerminalRefundEvent =
  /** The request is about to go to the terminal: from here it may hold it. */
  | { type: 'SEND' }
  | { type: 'SUCCEED' }
  | { type: 'FAIL' }
  /** The terminal answered Busy, or said by status it never held the request: it may be sent again. */
  | { type: 'NOT_HELD' }
  /** A new refund request for the same payment after a failed one. */
  | { type: 'RETRY' };

/**
 * A refund carried out by a nexo terminal (docs/terminals-nexo.md "Refunds"), the one place its
 * moves are written. `sent` is left only on the terminal's word: its answer (succeeded, failed) or
 * its status saying it never held the request. A lost answer keeps it `sent`, so no second request
 * goes out before the terminal has said: never two refunds of one payment.
 */
export const terminalRefundMachine = setup({ types: { events: {} as TerminalRefundEvent } }).createMachine({
  id: 'terminal-refund',
  initial: 'queued' satisfies TerminalRefundStatus,
  states: {
    queued: { on: { SEND: 'sent' } },
    sent: { on: { SUCCEED: 'succeeded', FAIL: 'failed', NOT_HELD: 'queued' } },
    succeeded: { type: 'final' },
    failed: { on: { RETRY: 'queued' } },
  },
});
