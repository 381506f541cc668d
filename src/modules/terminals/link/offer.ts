import type { AppContext } from '../../../context.js';
import { isoTime } from '../../../clock.js';
import { afterCommit, groupCommit, inGroupCommit } from '../../../db/group-commit.js';
import { terminalRefundInFlight } from '../../refunds/service.js';
import { applyEventToRow, commandContext, commandOffered, currentCommandOf } from '../commands/service.js';
import type { CommandRow } from '../commands/store.js';
import { chargeOf } from './charge.js';
import type { Session } from './session.js';

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
  return applyEventToRow(ctx, row, { type: 'OFFER', at: isoTime(ctx.clock.now()) }) ? row : undefined;
}

/** What offering in a creating commit needs of the bridge (bridge.ts). */
export interface CommitOffers {
  /** The terminal's session if it is attached and its link up. */
  liveSession(terminalId: string): Session | undefined;
  /** The terminal's session now, live or not (a replaced link is not the one offered on). */
  session(terminalId: string): Session | undefined;
  armStatusTimer(commandId: string): void;
  guard(what: string, fn: () => void, fields?: Record<string, unknown>): void;
}

/**
 * Inside a group-commit job: offers the terminal's current command (if `only`, that one) and sends
 * its charge in the turn the batch's flush ends, before the batch's other signals and answers, that
 * flush starting without a gathering wait (`afterCommit(…, { first: true })`, decision 0291).
 */
function offerInJob(ctx: AppContext, bridge: CommitOffers, session: Session, only?: string): void {
  const terminalId = session.terminalId;
  const row = offerCurrentCommand(ctx, terminalId, only);
  if (!row) return;
  const fields = { terminal_id: terminalId, command_id: row.id };
  const charge = chargeOf(row);
  const sendCharge = () => {
    // Unless a savepoint around it rolled back (a joined write that failed after the command).
    if (!commandOffered(ctx, row.id)) return;
    // Replaced or down meanwhile: the next hello's reconciliation offers it again.
    if (bridge.session(terminalId) === session) {
      session.link.send(charge).catch((err: Error) => ctx.log.warn({ ...fields, err: err.message }, 'send to terminal failed'));
    }
    bridge.armStatusTimer(row.id);
  };
  afterCommit(ctx.db, () => bridge.guard('sending a charge', sendCharge, fields), { first: true });
}

/**
 * A command being created in a group commit (the API's POST) is offered in that commit (decision
 * 0278). Outside a group commit, or with the terminal away or busy, nothing happens here: the
 * `command` signal pumps.
 */
export function offerInCreatingCommit(ctx: AppContext, bridge: CommitOffers, terminalId: string, commandId: string): void {
  const session = bridge.liveSession(terminalId);
  if (!session || !inGroupCommit(ctx.db)) return;
  // A failure rolls back the offer's savepoint alone: the command is created, and pumped after.
  bridge.guard('offering a new command', () => offerInJob(ctx, bridge, session, commandId), { terminal_id: terminalId, command_id: commandId });
}

/**
 * Hands the terminal its one current command if it has not been offered yet (after a result, a
 * reconnect, a cancel, a refund's end): the OFFER commits through the group commit, its flush off
 * the event loop, and the charge leaves once it is durable (decision 0291).
 */
export function pumpInGroupCommit(ctx: AppContext, bridge: CommitOffers, session: Session): Promise<void> {
  return groupCommit(ctx.db, () => {
    if (bridge.liveSession(session.terminalId) === session) offerInJob(ctx, bridge, session);
  });
}
