import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { secretBoxOf } from '../../system/secret-box.js';
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
    nexo: row.transport === 'nexo' ? { address: row.nexo_address!, port: row.nexo_port!, poiid: row.nexo_poiid! } : null,
    account_id: row.account_id,
    live_mode: row.live_mode === 1,
    created_at: row.created_at,
  };
}

const NO_NEXO = {
  nexo_address: null,
  nexo_port: null,
  nexo_poiid: null,
  nexo_key_identifier: null,
  nexo_key_version: null,
  nexo_passphrase_sealed: null,
};

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
      ...NO_NEXO,
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

// ---- nexo terminals (docs/terminals-nexo.md): registered by the manager only, never through the API ----

export interface NexoRegistration {
  name: string;
  address: string;
  port: number;
  poiid: string;
  keyIdentifier: string;
  keyVersion: number;
  passphrase: string;
}

/**
 * Registers a nexo terminal: posd connects to it at `address:port`. The key's passphrase is sealed
 * with the box's key; the address must be literal, so the outbound guard admits exactly it.
 */
export function createNexoTerminal(ctx: AppContext, account: Account, reg: NexoRegistration): TerminalView {
  const errors: Record<string, string> = {};
  const version = isIP(reg.address);
  if (!version || /^(0\.0\.0\.0|::)$/.test(reg.address)) errors.address = 'must be the literal IPv4 or IPv6 address of the terminal on the store network';
  if (!Number.isInteger(reg.port) || reg.port < 1 || reg.port > 65_535) errors.port = 'must be a port number';
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(reg.poiid)) errors.poiid = 'must be the POIID the terminal shows, e.g. V400m-324688179';
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(reg.keyIdentifier)) errors.key_identifier = 'must be 1-64 letters, digits, dots, dashes or underscores';
  if (!Number.isInteger(reg.keyVersion) || reg.keyVersion < 0) errors.key_version = 'must be a whole number';
  if (reg.passphrase.length === 0) errors.passphrase = 'must not be empty';
  if (Object.keys(errors).length > 0) throw invalid(errors);
  const store = terminalsStore(ctx.db);
  const id = newId('trm');
  tx(ctx.db, () => {
    store.insert({
      id,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      name: reg.name,
      transport: 'nexo',
      serial_path: null,
      baud_rate: null,
      nexo_address: reg.address,
      nexo_port: reg.port,
      nexo_poiid: reg.poiid,
      nexo_key_identifier: reg.keyIdentifier,
      nexo_key_version: reg.keyVersion,
      nexo_passphrase_sealed: secretBoxOf(ctx).seal(reg.passphrase),
      // posd opens a nexo terminal's link itself; no token is ever presented. A random one keeps the column's meaning.
      token_hash: hashPairingToken(randomToken(40)),
      created_at: isoTime(ctx.clock.now()),
    });
  });
  afterCommit(ctx.db, () => terminalSignals(ctx).emit('registered', id));
  return terminalView(store.byId(id)!);
}

export function nexoTerminals(ctx: AppContext): TerminalRow[] {
  return terminalsStore(ctx.db).nexoTerminals();
}

/** Whether any nexo terminal is registered: the nexo driver is loaded only then. */
export function hasNexoTerminals(ctx: AppContext): boolean {
  return terminalsStore(ctx.db).nexoCount() > 0;
}

/** A nexo terminal's key, its passphrase opened with the box's key. */
export function nexoKeyOf(ctx: AppContext, row: TerminalRow): { keyIdentifier: string; keyVersion: number; passphrase: string } {
  return { keyIdentifier: row.nexo_key_identifier!, keyVersion: row.nexo_key_version!, passphrase: secretBoxOf(ctx).open(row.nexo_passphrase_sealed!) };
}

/** After the caller's commit: a refund for `terminalId` to carry out was queued (the nexo link side listens). */
export function signalTerminalRefund(ctx: AppContext, terminalId: string): void {
  afterCommit(ctx.db, () => terminalSignals(ctx).emit('refund', terminalId));
}
