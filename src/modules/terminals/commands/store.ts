import type { Db } from '../../../db/database.js';
import { accountTerm, listCount } from '../../../db/list-counts.js';
import type { CommandStatus } from './machine.js';
import { perDb } from '../../../db/per-db.js';

export interface CommandRow {
  seq: number;
  id: string;
  account_id: string;
  live_mode: number;
  terminal_id: string;
  external_id: string;
  status: CommandStatus;
  final: number;
  /** 1 once the charge was handed to the terminal's link (the machine's `context.offered`). */
  offered: number;
  amount_in_cents: number;
  currency: string;
  installments: number | null;
  description: string | null;
  show_post_payment_screens: number;
  print_receipt: number;
  tax_id: string | null;
  items: string | null;
  checkout_id: string;
  checkout_url: string | null;
  snapshot: string;
  cancellation_requested_at: string | null;
  canceled_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface CommandRowWithTerminal extends CommandRow {
  terminal_availability: 'available' | 'unavailable';
}

export interface CommandFilters {
  terminal_id?: string;
  status?: string;
  external_id?: string;
}

/**
 * Every SQL statement of terminal session commands, prepared once per database.
 *
 * `= +?` in the statements a charge runs: with a bare `?` on an equality the query planner leaves
 * to a filter, SQLite (3.5x) marks the parameter as one whose value may change the plan, and
 * better-sqlite3's clearing of the bindings after each run then makes SQLite compile the statement
 * again on the next run (and better-sqlite3 build its row shape again): 15-45 µs a run instead of
 * 1-3. The unary `+` leaves the value, its comparison and the index used as they were (decision 0308).
 */
export const commandsStore = perDb(makeStore);

function makeStore(db: Db) {
  const withTerminal = `SELECT c.*, t.availability AS terminal_availability FROM terminal_commands c JOIN terminals t ON t.id = c.terminal_id`;
  const insert = db.prepare(
    `INSERT INTO terminal_commands (id, account_id, live_mode, terminal_id, external_id, status, final, offered, amount_in_cents, currency,
       installments, description, show_post_payment_screens, print_receipt, tax_id, items, checkout_id, checkout_url, snapshot,
       cancellation_requested_at, canceled_at, created_at, updated_at)
     VALUES (@id, @account_id, @live_mode, @terminal_id, @external_id, @status, @final, @offered, @amount_in_cents, @currency,
       @installments, @description, @show_post_payment_screens, @print_receipt, @tax_id, @items, @checkout_id, @checkout_url, @snapshot,
       NULL, NULL, @created_at, @created_at)`,
  );
  const byId = db.prepare(`${withTerminal} WHERE c.id = +?`);
  const byExternal = db.prepare(`${withTerminal} WHERE c.account_id = +? AND c.external_id = +?`);
  const update = db.prepare(
    `UPDATE terminal_commands SET status = @status, final = @final, offered = @offered, snapshot = @snapshot,
       cancellation_requested_at = @cancellation_requested_at, canceled_at = @canceled_at, updated_at = @updated_at
     WHERE id = @id`,
  );
  // `final = 0` (true of every pending command) lets both read the open index: the terminal's open
  // commands in order, not every command it ever had sorted on each charge.
  const untakenPending = db.prepare(
    `SELECT c.* FROM terminal_commands c WHERE c.terminal_id = +? AND c.final = 0 AND c.status = 'pending' AND c.offered = 0 ORDER BY c.seq`,
  );
  const offeredOpen = db.prepare(`SELECT c.* FROM terminal_commands c WHERE c.terminal_id = +? AND c.final = 0 AND c.offered = 1 ORDER BY c.seq LIMIT 1`);
  const newestUntaken = db.prepare(
    `SELECT c.* FROM terminal_commands c WHERE c.terminal_id = +? AND c.final = 0 AND c.status = 'pending' AND c.offered = 0 ORDER BY c.seq DESC LIMIT 1`,
  );
  const takenOpen = db.prepare(`SELECT 1 FROM terminal_commands c WHERE c.terminal_id = +? AND c.final = 0 AND c.offered = 1 LIMIT 1`);
  const open = db.prepare(`SELECT c.* FROM terminal_commands c WHERE c.final = 0 ORDER BY c.seq`);
  const ofCheckout = db.prepare(`SELECT c.external_id, c.description FROM terminal_commands c WHERE c.checkout_id = ? ORDER BY c.seq DESC LIMIT 1`);
  const consumedOfCheckout = db.prepare(
    `SELECT c.*, t.transport, t.retired_at FROM terminal_commands c JOIN terminals t ON t.id = c.terminal_id
     WHERE c.checkout_id = ? AND c.status = 'consumed' ORDER BY c.seq DESC LIMIT 1`,
  );
  const isOffered = db.prepare(`SELECT offered FROM terminal_commands WHERE id = ?`).pluck();
  const openOfTerminal = db.prepare(`SELECT c.* FROM terminal_commands c WHERE c.terminal_id = +? AND c.final = 0 ORDER BY c.seq`);

  function where(accountIds: string[], liveMode: boolean, f: CommandFilters) {
    const accounts = accountTerm('c.account_id', '@accounts', accountIds);
    const clauses = [accounts.sql, 'c.live_mode = @live_mode'];
    const params: Record<string, unknown> = { accounts: accounts.value, live_mode: liveMode ? 1 : 0 };
    if (f.terminal_id !== undefined) clauses.push('c.terminal_id = @terminal_id'), (params.terminal_id = f.terminal_id);
    if (f.status !== undefined) clauses.push('c.status = @status'), (params.status = f.status);
    if (f.external_id !== undefined) clauses.push('c.external_id = @external_id'), (params.external_id = f.external_id);
    return { sql: clauses.join(' AND '), params };
  }
  // Eight shapes at most (three optional filters): prepared lazily, then reused.
  const listCache = new Map<string, { rows: ReturnType<Db['prepare']>; count: ReturnType<Db['prepare']> }>();

  return {
    insert: (row: Omit<CommandRow, 'seq' | 'updated_at' | 'cancellation_requested_at' | 'canceled_at'>) => insert.run(row),
    byId: (id: string) => byId.get(id) as CommandRowWithTerminal | undefined,
    /** Whether the command exists and is marked offered: one column, read before a charge leaves. */
    isOffered: (id: string) => isOffered.get(id) === 1,
    byExternalId: (accountId: string, externalId: string) => byExternal.get(accountId, externalId) as CommandRowWithTerminal | undefined,
    update: (row: Pick<CommandRow, 'id' | 'status' | 'final' | 'offered' | 'snapshot' | 'cancellation_requested_at' | 'canceled_at' | 'updated_at'>) =>
      update.run(row),
    /** Pending commands never handed to the terminal: the ones a newer command supersedes. */
    untakenPending: (terminalId: string) => untakenPending.all(terminalId) as CommandRow[],
    /** The open command the terminal may hold (offered to it), oldest first: it has priority. */
    offeredOpen: (terminalId: string) => offeredOpen.get(terminalId) as CommandRow | undefined,
    newestUntaken: (terminalId: string) => newestUntaken.get(terminalId) as CommandRow | undefined,
    hasOfferedOpen: (terminalId: string) => takenOpen.get(terminalId) !== undefined,
    open: () => open.all() as CommandRow[],
    /** The till's reference and description for a checkout it sent to a terminal (the latest command). */
    ofCheckout: (checkoutId: string) => ofCheckout.get(checkoutId) as Pick<CommandRow, 'external_id' | 'description'> | undefined,
    openOfTerminal: (terminalId: string) => openOfTerminal.all(terminalId) as CommandRow[],
    consumedOfCheckout: (checkoutId: string) =>
      consumedOfCheckout.get(checkoutId) as (CommandRow & { transport: string; retired_at: string | null }) | undefined,
    list(accountIds: string[], liveMode: boolean, f: CommandFilters, limit: number, offset: number) {
      const w = where(accountIds, liveMode, f);
      let q = listCache.get(w.sql);
      if (!q) {
        q = {
          rows: db.prepare(`${withTerminal} WHERE ${w.sql} ORDER BY c.seq DESC LIMIT @limit OFFSET @offset`),
          count: db.prepare(`SELECT COUNT(*) AS n FROM terminal_commands c WHERE ${w.sql}`),
        };
        listCache.set(w.sql, q);
      }
      return {
        rows: q.rows.all({ ...w.params, limit, offset }) as CommandRowWithTerminal[],
        // Unfiltered or by status only: the counters (decision 0270); a terminal or reference counts its rows.
        total:
          f.terminal_id === undefined && f.external_id === undefined
            ? listCount(db, 'terminal_commands', accountIds, liveMode, f.status ?? '')
            : (q.count.get(w.params) as { n: number }).n,
      };
    },
  };
}
