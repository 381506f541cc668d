import { createHash, timingSafeEqual } from 'node:crypto';
import { afterCommit } from '../../db/group-commit.js';
import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { newId, randomToken } from '../../ids.js';
import { invalid, notFound } from '../../errors.js';
import { terminalsStore, type TerminalRow } from './store.js';
import { terminalSignals } from './signals.js';
import type { CreateTerminalBody, TerminalView } from './schema.js';

export type { TerminalRow } from './store.js';

export function hashPairingToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function terminalView(row: TerminalRow): TerminalView {
  return {
    id: row.id,
    name: row.name,
    transport: row.transport,
    availability: row.availability,
    last_seen_at: row.last_seen_at,
    model: row.model,
    firmware: row.firmware,
    serial_path: row.serial_path,
    baud_rate: row.baud_rate,
    account_id: row.account_id,
    live_mode: row.live_mode === 1,
    created_at: row.created_at,
  };
}

/** Registers a terminal; the pairing token is returned here and never again. */
export function createTerminal(ctx: AppContext, account: Account, body: CreateTerminalBody): { terminal: TerminalView; pairingToken: string } {
  const transport = body.transport ?? (body.serial_path ? 'serial' : 'websocket');
  if (transport === 'serial' && !body.serial_path) throw invalid({ serial_path: 'is required for a serial terminal' });
  if (transport === 'websocket' && (body.serial_path || body.baud_rate)) {
    throw invalid({ transport: 'serial_path and baud_rate belong to a serial terminal' });
  }
  const store = terminalsStore(ctx.db);
  const pairingToken = `tpt_${randomToken(40)}`;
  const id = newId('trm');
  tx(ctx.db, () => {
    store.insert({
      id,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      name: body.name,
      transport,
      serial_path: transport === 'serial' ? body.serial_path! : null,
      baud_rate: transport === 'serial' ? (body.baud_rate ?? 115_200) : null,
      token_hash: hashPairingToken(pairingToken),
      created_at: isoTime(ctx.clock.now()),
    });
  });
  afterCommit(ctx.db, () => terminalSignals(ctx).emit('registered', id));
  return { terminal: terminalView(store.byId(id)!), pairingToken };
}

/** A live terminal of one of these accounts, or undefined (retired, unknown, another account or environment). */
export function findTerminal(ctx: AppContext, scope: { accountIds: string[]; liveMode: boolean }, id: string): TerminalRow | undefined {
  const row = terminalsStore(ctx.db).byId(id);
  if (!row || row.retired_at || !scope.accountIds.includes(row.account_id) || (row.live_mode === 1) !== scope.liveMode) return undefined;
  return row;
}

export function getTerminal(ctx: AppContext, scope: { accountIds: string[]; liveMode: boolean }, id: string): TerminalView {
  const row = findTerminal(ctx, scope, id);
  if (!row) throw notFound('terminal', id);
  return terminalView(row);
}

export function listTerminals(ctx: AppContext, scope: { accountIds: string[]; liveMode: boolean }, limit: number, offset: number) {
  const store = terminalsStore(ctx.db);
  return {
    rows: store.list(scope.accountIds, scope.liveMode, limit, offset).map(terminalView),
    total: store.count(scope.accountIds, scope.liveMode),
  };
}

// ---- For the bridge (link/) ----

/** The terminal a hello names, when its token matches and it is not retired. */
export function authenticateTerminal(ctx: AppContext, terminalId: string, token: string): TerminalRow | undefined {
  const row = terminalsStore(ctx.db).byId(terminalId);
  if (!row || row.retired_at) return undefined;
  const a = Buffer.from(row.token_hash, 'hex');
  const b = Buffer.from(hashPairingToken(token), 'hex');
  return a.length === b.length && timingSafeEqual(a, b) ? row : undefined;
}

export function terminalRow(ctx: AppContext, id: string): TerminalRow | undefined {
  return terminalsStore(ctx.db).byId(id);
}

export function serialTerminals(ctx: AppContext): TerminalRow[] {
  return terminalsStore(ctx.db).serialTerminals();
}

/** A hello was accepted: the terminal is available and says what it is. */
export function recordHello(ctx: AppContext, id: string, model: string, firmware: string): void {
  tx(ctx.db, () => terminalsStore(ctx.db).hello(id, model, firmware, isoTime(ctx.clock.now())));
}

export function recordSeen(ctx: AppContext, id: string, atMs: number): void {
  tx(ctx.db, () => terminalsStore(ctx.db).seen(id, isoTime(atMs)));
}

export function recordAvailability(ctx: AppContext, id: string, value: 'available' | 'unavailable', lastSeenMs?: number): void {
  tx(ctx.db, () => terminalsStore(ctx.db).setAvailability(id, value, lastSeenMs === undefined ? null : isoTime(lastSeenMs)));
}

/** At start no link is up yet: every terminal is unavailable until it says hello again. */
export function markAllUnavailable(ctx: AppContext): void {
  tx(ctx.db, () => terminalsStore(ctx.db).allUnavailable());
}
