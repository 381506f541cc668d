import type { AppContext } from '../../context.js';
import { afterCommit } from '../../db/group-commit.js';
import type { Account } from '../../accounts/service.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { ApiError, notFound } from '../../errors.js';
import { terminalsStore } from './store.js';
import { terminalSignals } from './signals.js';
import { findTerminal, terminalView } from './service.js';
import type { TerminalView } from './schema.js';
import { cancelUntakenCommandsOfTerminal, terminalHasTakenCommand } from './commands/service.js';
import { openTerminalRefunds } from '../refunds/service.js';

// Here rather than in service.ts: retiring reaches into the commands, which themselves stand on the
// registry in service.ts; keeping it apart leaves no cycle between the two.

/**
 * Retires a terminal: its token stops working and its link closes. A terminal that holds a command
 * cannot be retired (the payment on it may still complete), nor one with a refund to carry out (a
 * nexo terminal's, docs/terminals-nexo.md); its untaken commands are canceled.
 */
export function retireTerminal(ctx: AppContext, account: Account, id: string): TerminalView {
  const scope = { accountIds: [account.id], liveMode: account.live_mode };
  const row = findTerminal(ctx, scope, id);
  if (!row) throw notFound('terminal', id);
  const store = terminalsStore(ctx.db);
  tx(ctx.db, () => {
    if (terminalHasTakenCommand(ctx, id)) throw new ApiError('terminal_busy');
    if (openTerminalRefunds(ctx, id).length > 0)
      throw new ApiError('terminal_busy', { message: 'The terminal has a refund to carry out; retire it once that refund is answered.' });
    cancelUntakenCommandsOfTerminal(ctx, id);
    store.retire(id, isoTime(ctx.clock.now()));
  });
  afterCommit(ctx.db, () => terminalSignals(ctx).emit('retired', id));
  return terminalView(store.byId(id)!);
}
