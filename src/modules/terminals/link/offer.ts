import type { AppContext } from '../../../context.js';
import { isoTime } from '../../../clock.js';
import { terminalRefundInFlight } from '../../refunds/service.js';
import { applyTerminalEvent, commandContext, currentCommandOf } from '../commands/service.js';
import type { CommandRow } from '../commands/store.js';

/**
 * Marks the terminal's current command (if `only`, that one) offered, written before its charge is
 * sent; undefined when there is none to offer now. A terminal runs one transaction at a time: while a
 * refund request may be on it (`sent`, its answer or status not yet in: docs/terminals-nexo.md
 * "Refunds"), the command stays pending, not offered, and the refund's settling pumps it
 * (nexo-refunds.ts), as a charge's result pumps the next command.
 */
export function offerCurrentCommand(ctx: AppContext, terminalId: string, only?: string): CommandRow | undefined {
  const row = currentCommandOf(ctx, terminalId);
  if (row?.status !== 'pending' || commandContext(row).offered || (only !== undefined && row.id !== only)) return undefined;
  if (terminalRefundInFlight(ctx, terminalId)) return undefined;
  return applyTerminalEvent(ctx, row.id, { type: 'OFFER', at: isoTime(ctx.clock.now()) })?.changed ? row : undefined;
}
