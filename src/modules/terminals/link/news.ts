import type { AppContext } from '../../../context.js';
import { groupCommit } from '../../../db/group-commit.js';
import { applyTerminalEvent, commandRow, type AppliedEvent } from '../commands/service.js';
import type { CommandEvent } from '../commands/machine.js';
import type { CommandRow } from '../commands/store.js';
import type { Session } from './session.js';
import type { StatusTimers } from './status-timers.js';

/** The command must exist and belong to this terminal; anything else is logged and ignored. */
export function ownCommand(ctx: AppContext, session: Session, commandId: string): CommandRow | undefined {
  const row = commandRow(ctx, commandId);
  if (!row || row.terminal_id !== session.terminalId) {
    ctx.log.warn({ terminal_id: session.terminalId, command_id: commandId }, 'message about a command this terminal does not have; ignored');
    return undefined;
  }
  return row;
}

/** News of a command (taken, a progress stage) applied in a transaction of its own: a hello's reconciliation. */
export function applyNews(ctx: AppContext, timers: StatusTimers, session: Session, commandId: string, event: CommandEvent): AppliedEvent | undefined {
  if (!ownCommand(ctx, session, commandId)) return undefined;
  const applied = applyTerminalEvent(ctx, commandId, event);
  if (applied && applied.row.final === 0) timers.arm(commandId);
  return applied;
}

/**
 * A terminal's ack or progress report, through the group commit: it joins the batch of whatever
 * else commits in that turn (another terminal's charge, this one's result) and waits for that batch's
 * flush off the event loop, never an `fdatasync` of its own on it (decision 0291). Nothing is
 * answered to the terminal for these; messages of one link reach the group commit in the order they
 * came, so a result after them commits after them.
 */
export async function commitNews(ctx: AppContext, timers: StatusTimers, session: Session, commandId: string, event: CommandEvent): Promise<void> {
  const applied = await groupCommit(ctx.db, () => (ownCommand(ctx, session, commandId) ? applyTerminalEvent(ctx, commandId, event) : undefined));
  if (applied && applied.row.final === 0) timers.arm(commandId);
}
