import type { Db } from '../../../db/database.js';
import type { StoredPaymentStatus } from './machine.js';

export interface StoredPaymentRow {
  seq: number;
  id: string;
  account_id: string;
  live_mode: number;
  terminal_id: string;
  command_id: string;
  checkout_id: string;
  offline_reference: string;
  status: StoredPaymentStatus;
  final: number;
  amount_in_cents: number;
  currency: string;
  card_network: string | null;
  card_last4: string | null;
  /** JSON array of cap names, or null. */
  over_cap: string | null;
  stored_at: string;
  forward_by: string;
  forwarded_at: string | null;
  settled_at: string | null;
  authorization_code: string | null;
  processor_reference: string | null;
  reason: string | null;
  late_outcome: string | null;
  /** The pending payment intent that takes the outcome (null: the checkout could not wait for it). */
  payment_intent_id: string | null;
  updated_at: string;
}

/** At a central: what a store's `stored_payment` record brought (central_stored_payments). */
export interface CentralStoredPaymentRow {
  id: string;
  origin_store_id: string;
  account_id: string;
  live_mode: number;
  terminal_id: string;
  command_id: string;
  checkout_id: string;
  payment_intent_id: string | null;
  offline_reference: string;
  status: 'approved' | 'declined' | 'expired';
  amount_in_cents: number;
  currency: string;
  card_network: string | null;
  card_last4: string | null;
  over_cap: string | null;
  reason: string | null;
  stored_at: string;
  forward_by: string;
  forwarded_at: string | null;
  settled_at: string;
  external_id: string | null;
  description: string | null;
  tax_id: string | null;
}

export interface OfflineCapsRow {
  account_id: string;
  live_mode: number;
  allowed: number;
  max_payment_in_cents: number;
  max_total_in_cents: number;
  max_count: number;
  max_age_hours: number;
  updated_at: string;
}

export interface OfflineOverrideRow {
  id: string;
  account_id: string;
  live_mode: number;
  until_at: string;
  caps: string;
  reason: string;
  actor: string;
  created_at: string;
  revoked_at: string | null;
}

export interface TerminalCapsRow {
  terminal_id: string;
  account_id: string;
  live_mode: number;
  allowed: number | null;
  max_payment_in_cents: number | null;
  max_total_in_cents: number | null;
  max_count: number | null;
  max_age_hours: number | null;
  updated_at: string;
}

export interface OfflineAuditRow {
  seq: number;
  id: string | null;
  account_id: string;
  live_mode: number;
  terminal_id: string | null;
  action: 'caps_set' | 'terminal_caps_set' | 'override_allow' | 'override_revoke';
  actor: string;
  reason: string;
  before: string;
  after: string;
  at: string;
}

export interface OpenTotals {
  count: number;
  amount: number;
  /** The earliest deadline among open payments, or null when none is open. */
  forward_by: string | null;
}

const stores = new WeakMap<Db, ReturnType<typeof makeStore>>();

/** Every SQL statement of stored payments, prepared once per database. */
export function storedPaymentsStore(db: Db) {
  let s = stores.get(db);
  if (!s) stores.set(db, (s = makeStore(db)));
  return s;
}

function makeStore(db: Db) {
  const insert = db.prepare(
    `INSERT INTO stored_payments (id, account_id, live_mode, terminal_id, command_id, checkout_id, offline_reference, status, final,
       amount_in_cents, currency, card_network, card_last4, over_cap, stored_at, forward_by, payment_intent_id, updated_at)
     VALUES (@id, @account_id, @live_mode, @terminal_id, @command_id, @checkout_id, @offline_reference, @status, @final,
       @amount_in_cents, @currency, @card_network, @card_last4, @over_cap, @stored_at, @forward_by, @payment_intent_id, @stored_at)`,
  );
  const byId = db.prepare(`SELECT * FROM stored_payments WHERE id = ?`);
  const byCommand = db.prepare(`SELECT * FROM stored_payments WHERE command_id = ?`);
  const byReference = db.prepare(`SELECT * FROM stored_payments WHERE terminal_id = ? AND offline_reference = ?`);
  // The status guard makes a concurrent second writer a no-op rather than a double move.
  const move = db.prepare(
    `UPDATE stored_payments SET status = @status, final = @final, forwarded_at = COALESCE(forwarded_at, @forwarded_at),
       settled_at = COALESCE(settled_at, @settled_at), authorization_code = COALESCE(@authorization_code, authorization_code),
       processor_reference = COALESCE(@processor_reference, processor_reference), reason = COALESCE(@reason, reason),
       card_network = COALESCE(@card_network, card_network), card_last4 = COALESCE(@card_last4, card_last4), updated_at = @updated_at
     WHERE id = @id AND status = @from`,
  );
  const setLate = db.prepare(`UPDATE stored_payments SET late_outcome = ?, updated_at = ? WHERE id = ? AND late_outcome IS NULL`);
  const totals = db.prepare(
    `SELECT COUNT(*) AS count, COALESCE(SUM(amount_in_cents), 0) AS amount, MIN(forward_by) AS forward_by
       FROM stored_payments WHERE account_id = ? AND live_mode = ? AND final = 0`,
  );
  const due = db.prepare(`SELECT * FROM stored_payments WHERE final = 0 AND status = 'stored' AND forward_by <= ? ORDER BY forward_by`);
  const open = db.prepare(`SELECT * FROM stored_payments WHERE final = 0 ORDER BY seq`);
  const openOfTerminal = db.prepare(`SELECT * FROM stored_payments WHERE terminal_id = ? AND final = 0 ORDER BY seq`);
  const openOverCap = db.prepare(`SELECT * FROM stored_payments WHERE final = 0 AND over_cap IS NOT NULL ORDER BY seq`);
  const nextDeadline = db.prepare(`SELECT MIN(forward_by) AS at FROM stored_payments WHERE final = 0 AND status = 'stored'`);
  const list = db.prepare(
    `SELECT * FROM stored_payments WHERE account_id IN (SELECT value FROM json_each(@accounts)) AND live_mode = @live_mode
       AND (@status IS NULL OR status = @status) ORDER BY seq DESC LIMIT @limit`,
  );
  const all = db.prepare(`SELECT * FROM stored_payments ORDER BY seq`);
  const storedBetween = db.prepare(`SELECT * FROM stored_payments WHERE stored_at >= ? AND stored_at < ? ORDER BY seq`);
  const openByStatus = db.prepare(
    `SELECT status, currency, COUNT(*) AS count, SUM(amount_in_cents) AS amount_in_cents FROM stored_payments
       WHERE final = 0 GROUP BY status, currency ORDER BY status, currency`,
  );
  const caps = db.prepare(`SELECT * FROM offline_caps WHERE account_id = ? AND live_mode = ?`);
  const upsertCaps = db.prepare(
    `INSERT INTO offline_caps (account_id, live_mode, allowed, max_payment_in_cents, max_total_in_cents, max_count, max_age_hours, updated_at)
     VALUES (@account_id, @live_mode, @allowed, @max_payment_in_cents, @max_total_in_cents, @max_count, @max_age_hours, @updated_at)
     ON CONFLICT (account_id, live_mode) DO UPDATE SET allowed = excluded.allowed, max_payment_in_cents = excluded.max_payment_in_cents,
       max_total_in_cents = excluded.max_total_in_cents, max_count = excluded.max_count, max_age_hours = excluded.max_age_hours,
       updated_at = excluded.updated_at`,
  );
  const activeOverride = db.prepare(
    `SELECT * FROM offline_overrides WHERE account_id = ? AND live_mode = ? AND revoked_at IS NULL AND until_at > ?
     ORDER BY created_at DESC, rowid DESC LIMIT 1`,
  );
  const insertOverride = db.prepare(
    `INSERT INTO offline_overrides (id, account_id, live_mode, until_at, caps, reason, actor, created_at)
     VALUES (@id, @account_id, @live_mode, @until_at, @caps, @reason, @actor, @created_at)`,
  );
  const revokeOverrides = db.prepare(
    `UPDATE offline_overrides SET revoked_at = ? WHERE account_id = ? AND live_mode = ? AND revoked_at IS NULL AND until_at > ?`,
  );
  const audit = db.prepare(
    `INSERT INTO offline_audit (id, account_id, live_mode, terminal_id, action, actor, reason, before, after, at)
     VALUES (@id, @account_id, @live_mode, @terminal_id, @action, @actor, @reason, @before, @after, @at)`,
  );
  const terminalCaps = db.prepare(`SELECT * FROM terminal_offline_caps WHERE terminal_id = ?`);
  const nextTimeChange = db.prepare(
    `SELECT MIN(at) AS at FROM (SELECT MIN(until_at) AS at FROM offline_overrides WHERE revoked_at IS NULL AND until_at > @now
       UNION ALL SELECT MIN(forward_by) FROM stored_payments WHERE final = 0 AND forward_by > @now)`,
  );
  const upsertTerminalCaps = db.prepare(
    `INSERT INTO terminal_offline_caps (terminal_id, account_id, live_mode, allowed, max_payment_in_cents, max_total_in_cents, max_count, max_age_hours, updated_at)
     VALUES (@terminal_id, @account_id, @live_mode, @allowed, @max_payment_in_cents, @max_total_in_cents, @max_count, @max_age_hours, @updated_at)
     ON CONFLICT (terminal_id) DO UPDATE SET allowed = excluded.allowed, max_payment_in_cents = excluded.max_payment_in_cents,
       max_total_in_cents = excluded.max_total_in_cents, max_count = excluded.max_count, max_age_hours = excluded.max_age_hours,
       updated_at = excluded.updated_at`,
  );
  const terminalTotals = db.prepare(
    `SELECT COUNT(*) AS count, COALESCE(SUM(amount_in_cents), 0) AS amount, MIN(forward_by) AS forward_by
       FROM stored_payments WHERE terminal_id = ? AND final = 0`,
  );
  const page = db.prepare(
    `SELECT * FROM stored_payments WHERE account_id IN (SELECT value FROM json_each(@accounts)) AND live_mode = @live_mode
       AND (@status IS NULL OR status = @status) AND (@terminal_id IS NULL OR terminal_id = @terminal_id) ORDER BY seq DESC LIMIT @limit OFFSET @offset`,
  );
  const pageCount = db.prepare(
    `SELECT COUNT(*) AS n FROM stored_payments WHERE account_id IN (SELECT value FROM json_each(@accounts)) AND live_mode = @live_mode
       AND (@status IS NULL OR status = @status) AND (@terminal_id IS NULL OR terminal_id = @terminal_id)`,
  );
  const auditPage = db.prepare(
    `SELECT * FROM offline_audit WHERE account_id IN (SELECT value FROM json_each(@accounts)) AND live_mode = @live_mode
       ORDER BY seq DESC LIMIT @limit OFFSET @offset`,
  );
  const auditCount = db.prepare(
    `SELECT COUNT(*) AS n FROM offline_audit WHERE account_id IN (SELECT value FROM json_each(@accounts)) AND live_mode = @live_mode`,
  );
  const auditOf = db.prepare(`SELECT * FROM offline_audit WHERE account_id = ? AND live_mode = ? ORDER BY seq DESC LIMIT ?`);
  const insertCentral = db.prepare(
    `INSERT INTO central_stored_payments (id, origin_store_id, account_id, live_mode, terminal_id, command_id, checkout_id, payment_intent_id,
       offline_reference, status, amount_in_cents, currency, card_network, card_last4, over_cap, reason, stored_at, forward_by, forwarded_at,
       settled_at, external_id, description, tax_id)
     VALUES (@id, @origin_store_id, @account_id, @live_mode, @terminal_id, @command_id, @checkout_id, @payment_intent_id,
       @offline_reference, @status, @amount_in_cents, @currency, @card_network, @card_last4, @over_cap, @reason, @stored_at, @forward_by, @forwarded_at,
       @settled_at, @external_id, @description, @tax_id)
     ON CONFLICT (id) DO NOTHING`,
  );
  const centralOf = db.prepare(`SELECT * FROM central_stored_payments WHERE account_id = ? AND live_mode = ? ORDER BY settled_at, id`);
  const flagged = db.prepare(
    `SELECT * FROM stored_payments WHERE account_id = ? AND live_mode = ? AND (over_cap IS NOT NULL OR late_outcome IS NOT NULL) ORDER BY seq`,
  );

  return {
    insert: (
      row: Omit<
        StoredPaymentRow,
        'seq' | 'updated_at' | 'forwarded_at' | 'settled_at' | 'authorization_code' | 'processor_reference' | 'reason' | 'late_outcome'
      >,
    ) => insert.run(row),
    /** At a central: a store's stored payment in its final state; a second copy changes nothing. Returns whether it was new. */
    insertCentral: (row: CentralStoredPaymentRow) => insertCentral.run(row).changes === 1,
    centralOf: (accountId: string, liveMode: boolean) => centralOf.all(accountId, liveMode ? 1 : 0) as CentralStoredPaymentRow[],
    byId: (id: string) => byId.get(id) as StoredPaymentRow | undefined,
    byCommand: (commandId: string) => byCommand.get(commandId) as StoredPaymentRow | undefined,
    byReference: (terminalId: string, reference: string) => byReference.get(terminalId, reference) as StoredPaymentRow | undefined,
    /** Returns whether the row was still in `from`. */
    move: (m: {
      id: string;
      from: StoredPaymentStatus;
      status: StoredPaymentStatus;
      final: number;
      forwarded_at: string | null;
      settled_at: string | null;
      authorization_code: string | null;
      processor_reference: string | null;
      reason: string | null;
      card_network: string | null;
      card_last4: string | null;
      updated_at: string;
    }) => move.run(m).changes === 1,
    setLateOutcome: (id: string, late: string, at: string) => setLate.run(late, at, id),
    openTotals: (accountId: string, liveMode: boolean) => totals.get(accountId, liveMode ? 1 : 0) as OpenTotals,
    /** Every stored payment not final yet, installation-wide (at most the caps' counts of each account). */
    open: () => open.all() as StoredPaymentRow[],
    /** Stored payments whose deadline has come, never forwarded. */
    due: (nowIso: string) => due.all(nowIso) as StoredPaymentRow[],
    nextDeadline: () => (nextDeadline.get() as { at: string | null }).at,
    list: (accountIds: string[], liveMode: boolean, status: StoredPaymentStatus | null, limit: number) =>
      list.all({ accounts: JSON.stringify(accountIds), live_mode: liveMode ? 1 : 0, status, limit }) as StoredPaymentRow[],
    all: () => all.all() as StoredPaymentRow[],
    /** Every stored payment the terminals stored in [from, until), whatever its state now. */
    storedBetween: (fromIso: string, untilIso: string) => storedBetween.all(fromIso, untilIso) as StoredPaymentRow[],
    /** What waits (not final), installation-wide, by state and currency. */
    openByStatus: () => openByStatus.all() as Array<{ status: StoredPaymentStatus; currency: string; count: number; amount_in_cents: number }>,
    caps: (accountId: string, liveMode: boolean) => caps.get(accountId, liveMode ? 1 : 0) as OfflineCapsRow | undefined,
    setCaps: (row: OfflineCapsRow) => upsertCaps.run(row),
    activeOverride: (accountId: string, liveMode: boolean, nowIso: string) =>
      activeOverride.get(accountId, liveMode ? 1 : 0, nowIso) as OfflineOverrideRow | undefined,
    insertOverride: (row: Omit<OfflineOverrideRow, 'revoked_at'>) => insertOverride.run(row),
    revokeOverrides: (accountId: string, liveMode: boolean, nowIso: string) => revokeOverrides.run(nowIso, accountId, liveMode ? 1 : 0, nowIso).changes,
    audit: (row: Omit<OfflineAuditRow, 'seq'>) => audit.run(row),
    /** The next time a policy changes by the clock alone: an override ends, or a stored payment's deadline passes. */
    nextTimeChange: (nowIso: string) => (nextTimeChange.get({ now: nowIso }) as { at: string | null }).at,
    terminalCaps: (terminalId: string) => terminalCaps.get(terminalId) as TerminalCapsRow | undefined,
    setTerminalCaps: (row: TerminalCapsRow) => upsertTerminalCaps.run(row),
    /** One terminal's stored payments not final yet (its own caps count these). */
    terminalOpenTotals: (terminalId: string) => terminalTotals.get(terminalId) as OpenTotals,
    /** A page of stored payments, newest first, and how many match (the API's list). */
    page(accountIds: string[], liveMode: boolean, f: { status?: string; terminal_id?: string }, limit: number, offset: number) {
      const params = { accounts: JSON.stringify(accountIds), live_mode: liveMode ? 1 : 0, status: f.status ?? null, terminal_id: f.terminal_id ?? null };
      return {
        rows: page.all({ ...params, limit, offset }) as StoredPaymentRow[],
        total: (pageCount.get(params) as { n: number }).n,
      };
    },
    auditPage(accountIds: string[], liveMode: boolean, limit: number, offset: number) {
      const params = { accounts: JSON.stringify(accountIds), live_mode: liveMode ? 1 : 0 };
      return { rows: auditPage.all({ ...params, limit, offset }) as OfflineAuditRow[], total: (auditCount.get(params) as { n: number }).n };
    },
    auditOf: (accountId: string, liveMode: boolean, limit: number) => auditOf.all(accountId, liveMode ? 1 : 0, limit) as OfflineAuditRow[],
    /** Stored payments the manager must look at: over a cap when they arrived, or a late contradicting outcome. */
    flagged: (accountId: string, liveMode: boolean) => flagged.all(accountId, liveMode ? 1 : 0) as StoredPaymentRow[],
    /** One terminal's stored payments not final yet, oldest first. */
    openOfTerminal: (terminalId: string) => openOfTerminal.all(terminalId) as StoredPaymentRow[],
    /** Stored payments over a cap when they arrived and still waiting for their outcome. */
    openOverCap: () => openOverCap.all() as StoredPaymentRow[],
  };
}

/** A card stored offline and still waiting (not final), as `posd restore` names it. */
export interface WaitingStoredPayment {
  id: string;
  offline_reference: string;
  status: string;
  amount_in_cents: number;
  currency: string;
  stored_at: string;
}

/** Every stored payment not yet final, oldest first: what a restore must not drop unsaid. */
export function waitingStoredPayments(db: Db): WaitingStoredPayment[] {
  return db
    .prepare('SELECT id, offline_reference, status, amount_in_cents, currency, stored_at FROM stored_payments WHERE final = 0 ORDER BY stored_at, seq')
    .all() as WaitingStoredPayment[];
}
