import type { Db } from '../../../db/database.js';
import { perDb } from '../../../db/per-db.js';
import type { CentralStoredPaymentRow } from './store.js';

/** At a central: a store's reported change of its offline policy (central_offline_audit). */
export interface CentralAuditRow {
  id: string;
  origin_store_id: string;
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

const IN_ACCOUNTS = `account_id IN (SELECT value FROM json_each(@accounts)) AND live_mode = @live_mode`;

/** The central's reads of what its stores reported of their stored payments and offline policies. */
export const centralStoredStore = perDb((db: Db) => {
  const insertAudit = db.prepare(
    `INSERT INTO central_offline_audit (id, origin_store_id, account_id, live_mode, terminal_id, action, actor, reason, before, after, at)
     VALUES (@id, @origin_store_id, @account_id, @live_mode, @terminal_id, @action, @actor, @reason, @before, @after, @at)
     ON CONFLICT (id) DO NOTHING`,
  );
  const auditPage = db.prepare(`SELECT * FROM central_offline_audit WHERE ${IN_ACCOUNTS} ORDER BY at DESC, id DESC LIMIT @limit OFFSET @offset`);
  const auditCount = db.prepare(`SELECT COUNT(*) AS n FROM central_offline_audit WHERE ${IN_ACCOUNTS}`);
  // The latest reported change per account (and per terminal): the policy each store last said it runs.
  const latest = db.prepare(
    `SELECT * FROM central_offline_audit a WHERE ${IN_ACCOUNTS} AND action <> 'terminal_caps_set'
       AND at = (SELECT MAX(at) FROM central_offline_audit b WHERE b.account_id = a.account_id AND b.live_mode = a.live_mode
                  AND b.origin_store_id = a.origin_store_id AND b.action <> 'terminal_caps_set')
     UNION ALL
     SELECT * FROM central_offline_audit a WHERE ${IN_ACCOUNTS} AND action = 'terminal_caps_set' AND (@terminal_id IS NULL OR terminal_id = @terminal_id)
       AND at = (SELECT MAX(at) FROM central_offline_audit b WHERE b.terminal_id = a.terminal_id AND b.action = 'terminal_caps_set')
     ORDER BY at DESC`,
  );
  const paymentsPage = db.prepare(
    `SELECT * FROM central_stored_payments WHERE ${IN_ACCOUNTS} AND (@status IS NULL OR status = @status)
       AND (@terminal_id IS NULL OR terminal_id = @terminal_id) ORDER BY settled_at DESC, id DESC LIMIT @limit OFFSET @offset`,
  );
  const paymentsCount = db.prepare(
    `SELECT COUNT(*) AS n FROM central_stored_payments WHERE ${IN_ACCOUNTS} AND (@status IS NULL OR status = @status)
       AND (@terminal_id IS NULL OR terminal_id = @terminal_id)`,
  );
  const paymentById = db.prepare(`SELECT * FROM central_stored_payments WHERE id = ?`);
  const declinedLater = db.prepare(
    `SELECT * FROM central_stored_payments WHERE ${IN_ACCOUNTS} AND status IN ('declined', 'expired') ORDER BY settled_at, id LIMIT @limit`,
  );
  // A terminal is one store's, under one account: any row naming it from elsewhere (indexed by terminal_id).
  const terminalElsewhere = db.prepare(
    `SELECT origin_store_id, account_id, live_mode FROM (
       SELECT origin_store_id, account_id, live_mode FROM central_offline_audit WHERE terminal_id = @terminal_id
       UNION ALL SELECT origin_store_id, account_id, live_mode FROM central_stored_payments WHERE terminal_id = @terminal_id)
     WHERE origin_store_id <> @store OR account_id <> @account OR live_mode <> @live_mode LIMIT 1`,
  );
  const lastOverride = db.prepare(
    `SELECT * FROM central_offline_audit WHERE account_id = @account AND live_mode = @live_mode AND origin_store_id = @store
       AND action IN ('override_allow', 'override_revoke') ORDER BY at DESC, rowid DESC LIMIT 1`,
  );
  // What one store stored offline in a window, as it reported each payment once final (an outage report at the central).
  const storedDuring = db.prepare(
    `SELECT * FROM central_stored_payments WHERE origin_store_id = ? AND stored_at >= ? AND stored_at < ? ORDER BY stored_at, id`,
  );
  const scope = (accountIds: string[], liveMode: boolean) => ({ accounts: JSON.stringify(accountIds), live_mode: liveMode ? 1 : 0 });
  return {
    /** Returns whether it was new (a repeated push changes nothing). */
    insertAudit: (row: CentralAuditRow) => insertAudit.run(row).changes === 1,
    auditPage: (accountIds: string[], liveMode: boolean, limit: number, offset: number) => ({
      rows: auditPage.all({ ...scope(accountIds, liveMode), limit, offset }) as CentralAuditRow[],
      total: (auditCount.get(scope(accountIds, liveMode)) as { n: number }).n,
    }),
    latest: (accountIds: string[], liveMode: boolean, terminalId: string | null) =>
      latest.all({ ...scope(accountIds, liveMode), terminal_id: terminalId }) as CentralAuditRow[],
    paymentsPage(accountIds: string[], liveMode: boolean, f: { status?: string; terminal_id?: string }, limit: number, offset: number) {
      const params = { ...scope(accountIds, liveMode), status: f.status ?? null, terminal_id: f.terminal_id ?? null };
      return { rows: paymentsPage.all({ ...params, limit, offset }) as CentralStoredPaymentRow[], total: (paymentsCount.get(params) as { n: number }).n };
    },
    paymentById: (id: string) => paymentById.get(id) as CentralStoredPaymentRow | undefined,
    /** The stores' stored payments declined or expired later, oldest first: their sales are owed again. */
    declinedLater: (accountIds: string[], liveMode: boolean, limit: number) =>
      declinedLater.all({ ...scope(accountIds, liveMode), limit }) as CentralStoredPaymentRow[],
    /** Where else a terminal was reported from: another store, or another account (or mode). */
    terminalElsewhere: (terminalId: string, storeId: string, accountId: string, liveMode: boolean) =>
      terminalElsewhere.get({ terminal_id: terminalId, store: storeId, account: accountId, live_mode: liveMode ? 1 : 0 }) as
        | { origin_store_id: string; account_id: string; live_mode: number }
        | undefined,
    /** The final stored payments one store reported, stored in [from, until), oldest first. */
    storedDuring: (storeId: string, fromIso: string, untilIso: string) => storedDuring.all(storeId, fromIso, untilIso) as CentralStoredPaymentRow[],
    /** The store's latest override (allowed or revoked) of an account, as it reported it. */
    lastOverride: (storeId: string, accountId: string, liveMode: boolean) =>
      lastOverride.get({ store: storeId, account: accountId, live_mode: liveMode ? 1 : 0 }) as CentralAuditRow | undefined,
  };
});
