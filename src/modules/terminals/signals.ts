import { EventEmitter } from 'node:events';
import type { AppContext } from '../../context.js';

/**
 * What the terminal bridge (src/terminals/) must hear from the API side, always after the change
 * committed: the modules never import the bridge, the bridge listens here.
 */
export type TerminalSignalMap = {
  /** A terminal was registered (serial ones need their port opened). */
  registered: [terminalId: string];
  /** A terminal was retired: close its link, stop its port. */
  retired: [terminalId: string];
  /**
   * A command was just written, inside the transaction that creates it (not committed yet): the
   * bridge may offer it to the terminal in that same commit and send the charge once it is on disk.
   */
  created: [terminalId: string, commandId: string];
  /** A command of this terminal changed through the API (new, superseded, cancel requested). */
  command: [terminalId: string, commandId: string, effects: Array<{ type: string }>];
  /** A refund for this terminal to carry out was queued (a nexo terminal's, docs/terminals-nexo.md). */
  refund: [terminalId: string];
};

const signals = new WeakMap<AppContext, EventEmitter<TerminalSignalMap>>();

export function terminalSignals(ctx: AppContext): EventEmitter<TerminalSignalMap> {
  let s = signals.get(ctx);
  if (!s) {
    s = new EventEmitter<TerminalSignalMap>();
    s.setMaxListeners(0);
    signals.set(ctx, s);
  }
  return s;
}
