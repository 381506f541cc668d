import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';

export interface IntentRow {
  id: string;
  account_id: string;
  live_mode: number;
  type: 'payment' | 'bank_transfer' | 'crypto' | 'balance' | 'cash';
  status: string;
  raw_status: string;
  legacy_id: string;
  payment_id: string;
  receipt_number: number;
  amount_in_cents: number;
  currency: string;
  customer_id: string | null;
  checkout_id: string | null;
  tax_invoice_url: string | null;
  details: string;
  created_at: string;
}

/** Counts and sums of one account, environment, currency, type and status (reconciliation). */
export interface IntentTotalRow {
  account_id: string;
  live_mode: number;
  currency: string;
  type: string;
  status: string;
  count: number;
  amount_in_cents: number;
}

/** What `GET /intents` narrows by (spec 6.1 envelope fields; times as the API's bounds). */
export interface IntentListFilter {
  from?: string;
  until?: string;
  status?: string;
  type?: string;
}

const LIST_FILTER = 'AND created_at >= @from AND created_at <= @until AND (@status IS NULL OR status = @status) AND (@type IS NULL OR type = @type)';

/** All SQL of unified intents. */
export class IntentsStore {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO intents (id, account_id, live_mode, type, status, raw_status, legacy_id, payment_id, receipt_number,
           amount_in_cents, currency, customer_id, checkout_id, tax_invoice_url, details, created_at, origin)
         VALUES (@id, @account_id, @live_mode, @type, @status, @raw_status, @legacy_id, @payment_id, @receipt_number,
           @amount_in_cents, @currency, @customer_id, @checkout_id, @tax_invoice_url, @details, @created_at, @origin)`,
      ),
      byId: db.prepare('SELECT * FROM intents WHERE id = ?'),
      byLegacyId: db.prepare('SELECT * FROM intents WHERE legacy_id = ?'),
      list: db.prepare(
        `SELECT id FROM intents WHERE account_id IN (SELECT value FROM json_each(@accounts)) AND live_mode = @live ${LIST_FILTER}
         ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`,
      ),
      count: db.prepare(`SELECT count(*) AS n FROM intents WHERE account_id IN (SELECT value FROM json_each(@accounts)) AND live_mode = @live ${LIST_FILTER}`),
      nextReceipt: db.prepare('SELECT coalesce(max(receipt_number), 0) + 1 AS n FROM intents WHERE account_id = ?'),
      setInvoiceUrl: db.prepare('UPDATE intents SET tax_invoice_url = ? WHERE id = ?'),
      totals: db.prepare(
        `SELECT account_id, live_mode, currency, type, status, count(*) AS count, sum(amount_in_cents) AS amount_in_cents
         FROM intents WHERE origin IS ? AND created_at >= ? AND created_at < ? AND status != 'pending'
         GROUP BY account_id, live_mode, currency, type, status`,
      ),
      // The central's copy of an intent, taken as the central has it: a replica runs no lifecycle (docs/architecture.md).
      setState: db.prepare(
        'UPDATE intents SET status = @status, raw_status = @raw_status, tax_invoice_url = @tax_invoice_url, details = @details WHERE id = @id',
      ),
    };
  }

  /** `origin`: where the intent was first written (src/db/baseline.sql; `rowOrigin` in src/outbox/origins.ts). */
  insert(row: IntentRow, origin: string | null): void {
    this.stmts.insert.run({ ...row, origin });
  }
  totals(origin: string | null, from: string, until: string): IntentTotalRow[] {
    return this.stmts.totals.all(origin, from, until) as IntentTotalRow[];
  }
  byId(id: string): IntentRow | undefined {
    return this.stmts.byId.get(id) as IntentRow | undefined;
  }
  byLegacyId(id: string): IntentRow | undefined {
    return this.stmts.byLegacyId.get(id) as IntentRow | undefined;
  }
  /**
   * `GET /intents`: the ids of the accounts' intents in one environment, newest first, within
   * [from, until] and of a status/type when given. Each account's rows are reached through its
   * (account_id, receipt_number) index; only those are sorted by time.
   */
  list(accountIds: string[], liveMode: boolean, f: IntentListFilter, limit: number, offset: number): { ids: string[]; total: number } {
    const params = {
      accounts: JSON.stringify(accountIds),
      live: liveMode ? 1 : 0,
      from: f.from ?? '',
      until: f.until ?? '\uffff',
      status: f.status ?? null,
      type: f.type ?? null,
    };
    const ids = (this.stmts.list.all({ ...params, limit, offset }) as Array<{ id: string }>).map((r) => r.id);
    return { ids, total: (this.stmts.count.get(params) as { n: number }).n };
  }
  nextReceiptNumber(accountId: string): number {
    return (this.stmts.nextReceipt.get(accountId) as { n: number }).n;
  }
  setTaxInvoiceUrl(id: string, url: string | null): void {
    this.stmts.setInvoiceUrl.run(url, id);
  }
  /** What of an intent may change after it is made (its status, its invoice URL, its details). */
  setState(row: Pick<IntentRow, 'id' | 'status' | 'raw_status' | 'tax_invoice_url' | 'details'>): void {
    this.stmts.setState.run({ id: row.id, status: row.status, raw_status: row.raw_status, tax_invoice_url: row.tax_invoice_url, details: row.details });
  }
}

export const intentsStore = perDb((db) => new IntentsStore(db));

export interface SalesTotalRow {
  method: string;
  currency: string;
  count: number;
  amount_in_cents: number;
}

/**
 * Succeeded intents of one mode (live by default) in [from, until), by payment method and currency (the status page's
 * "today's sales"). A `payment` intent is named by its payment's method (card, terminal, ...).
 */
export function salesTotals(db: Db, fromIso: string, untilIso: string, liveMode = true, accountIds: string[] | null = null): SalesTotalRow[] {
  return db
    .prepare(
      `SELECT coalesce(p.method, i.type) AS method, i.currency, count(*) AS count, sum(i.amount_in_cents) AS amount_in_cents
       FROM intents i LEFT JOIN payment_intents p ON p.intent_id = i.id
       WHERE i.live_mode = ? AND i.status = 'succeeded' AND i.created_at >= ? AND i.created_at < ?
         AND (? IS NULL OR i.account_id IN (SELECT value FROM json_each(?)))
       GROUP BY 1, 2 ORDER BY 1, 2`,
    )
    .all(liveMode ? 1 : 0, fromIso, untilIso, accountIds && JSON.stringify(accountIds), accountIds && JSON.stringify(accountIds)) as SalesTotalRow[];
}
