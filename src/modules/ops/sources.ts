import type { AppContext } from '../../context.js';
import { accountsOf } from '../../accounts/service.js';
import { salesByMethod } from '../intents/service.js';
import { listTerminals } from '../terminals/service.js';
import { listCommands } from '../terminals/commands/service.js';
import { provideStatus, statusSources, type CommandInFlight, type TerminalStatus } from '../../system/status-sources.js';

/** A store box has a handful of terminals and commands: one page each is all of them. */
const ALL = 500;
const OPEN_STATES = ['pending', 'dispatched', 'cancel_requested'];

/** Every account of the installation, live and sandbox apart: the page is installation-wide. */
function scopes(ctx: AppContext): Array<{ accountIds: string[]; liveMode: boolean }> {
  const all = accountsOf(ctx).accounts();
  return [true, false]
    .map((liveMode) => ({ liveMode, accountIds: all.filter((a) => a.live_mode === liveMode).map((a) => a.id) }))
    .filter((s) => s.accountIds.length > 0);
}

function terminals(ctx: AppContext): TerminalStatus[] {
  return scopes(ctx).flatMap((scope) =>
    listTerminals(ctx, scope, ALL, 0).rows.map((t) => ({
      id: t.id,
      name: scope.liveMode ? t.name : `${t.name} (sandbox)`,
      account_id: t.account_id,
      available: t.availability === 'available',
      link: t.transport === 'serial' ? `serial ${t.serial_path}` : t.nexo ? `nexo ${t.nexo.poiid} at ${t.nexo.address}:${t.nexo.port}` : t.transport,
      last_seen_at: t.last_seen_at,
    })),
  );
}

/** Commands in flight, each with its terminal's name (the page shows names, not ids). */
function commandsInFlight(ctx: AppContext): CommandInFlight[] {
  const names = new Map(terminals(ctx).map((t) => [t.id, t.name]));
  return scopes(ctx)
    .flatMap((scope) => OPEN_STATES.flatMap((status) => listCommands(ctx, scope, { status }, ALL, 0).rows))
    .map((c) => ({
      id: c.id,
      external_id: c.external_id || null,
      description: c.description,
      terminal_id: c.terminal_id,
      terminal_name: names.get(c.terminal_id) ?? null,
      state: c.status,
      amount_in_cents: c.amount_in_cents,
      currency: c.currency,
      created_at: c.created_at,
    }))
    .sort((a, b) => a.created_at.localeCompare(b.created_at));
}

/**
 * The panels of the areas built into this posd, read through their exported service functions.
 * An area (or a test) that provided its own function first keeps it.
 */
export function provideBuiltInSources(ctx: AppContext): void {
  const have = statusSources(ctx);
  provideStatus(ctx, {
    salesBetween: have.salesBetween ?? ((from, until, liveMode = true) => salesByMethod(ctx, from, until, liveMode)),
    terminals: have.terminals ?? (() => terminals(ctx)),
    commandsInFlight: have.commandsInFlight ?? (() => commandsInFlight(ctx)),
  });
}
