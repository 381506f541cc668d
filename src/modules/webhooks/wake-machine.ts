import { setup } from 'xstate';
import { nextState, type StateOf } from '../../lifecycle.js';

/**
 * When the delivery worker (worker.ts) runs a pass: the ONLY place its wake states are written.
 * `idle` before start; `waiting` while running with no pass queued; `queued` once a pass is
 * scheduled for after the current tick (further wakes in that tick add nothing: one pass serves
 * them all); `stopped` for good. A pass queued before a stop never runs.
 */
export type WakeEvent = { type: 'START' } | { type: 'KICK' } | { type: 'RUN' } | { type: 'STOP' };

export const wakeMachine = setup({
  types: { events: {} as WakeEvent },
}).createMachine({
  id: 'webhook-wake',
  initial: 'idle',
  states: {
    idle: { on: { START: 'waiting', STOP: 'stopped' } },
    waiting: { on: { KICK: 'queued', STOP: 'stopped' } },
    queued: { on: { RUN: 'waiting', STOP: 'stopped' } },
    stopped: { type: 'final' },
  },
});

export type WakeState = StateOf<typeof wakeMachine>;

// Asked on every finished attempt: the machine's answers are read once into a table, so a wake
// costs a lookup, not a snapshot rebuild.
const table = new Map<string, WakeState | null>();
for (const from of ['idle', 'waiting', 'queued', 'stopped'] as const) {
  for (const type of ['START', 'KICK', 'RUN', 'STOP'] as const) table.set(`${from}:${type}`, nextState(wakeMachine, from, { type }));
}

/** Where `event` takes the worker from `from`, or null when the machine refuses it there. */
export function wakeNext(from: WakeState, event: WakeEvent['type']): WakeState | null {
  return table.get(`${from}:${event}`) ?? null;
}
