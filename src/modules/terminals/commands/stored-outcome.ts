import type { AppContext } from '../../../context.js';
import { applyCommandEvent, terminalDone } from './machine.js';
import { commandsStore } from './store.js';

/**
 * A `stored` command learns its stored payment's outcome: `consumed` when the processor approved
 * the card, `failed` when it was declined or expired. Inside the caller's transaction (the one that
 * makes the stored payment final). The move has no effects: the money follows the payment intent.
 * Apart from commands/service.ts because stored/service.ts calls it and commands/service.ts calls
 * stored/service.ts.
 */
export function settleStoredCommand(ctx: AppContext, commandId: string, approved: boolean, at: string): void {
  const store = commandsStore(ctx.db);
  const row = store.byId(commandId);
  if (!row) return;
  const next = applyCommandEvent(row.snapshot, { type: 'STORED_OUTCOME', at, approved });
  if (!next) return;
  store.update({
    id: row.id,
    status: next.status,
    final: terminalDone(next) ? 1 : 0,
    offered: next.context.offered ? 1 : 0,
    snapshot: next.snapshot,
    cancellation_requested_at: next.context.cancellationRequestedAt,
    canceled_at: next.context.canceledAt,
    updated_at: at,
  });
}
