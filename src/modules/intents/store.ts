import type { Db } from '../../db/database.js';
import { accountTerm, listCount, statementCache } from '../../db/list-counts.js';
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

/** All SQL of unified intents. */
export class IntentsStore {
  private readonly stmts;
  private readonly cached;

  constructor(private readonly db: Db) {
    this.cached = statementCache(db);
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO intents (id, account_id, live_mode, type, status, raw_status, legacy_id, payment_id, receipt_number,
           amount_in_cents, currency, customer_id, checkout_id, tax_invoice_url, details, created_at, origin)
         VALUES (@id, @account_id, @live_mode, @type, @status, @raw_status, @legacy_id, @payment_id, @receipt_number,
           @amount_in_cents, @currency, @customer_id, @checkout_id, @tax_invoice_url, @details, @created_at, @origin)`,
      ),
      byId: db.prepare('SELECT * FROM intents WHERE id = ?'),
      byLegacyId: db.prepare('SELECT * FROM intents WHERE legacy_id = ?'),
      // `+?`: compiled once, not again on every run (decision 0308, src/modules/terminals/commands/store.ts).
      nextReceipt: db.prepare('SELECT coalesce(max(receipt_number), 0) + 1 AS n FROM intents WHERE account_id = +?'),
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
    // A clause per given filter only, so the planner picks the index that holds the order (0190).
    const accounts = accountTerm('account_id', '@accounts', accountIds);
    const params: Record<string, unknown> = { accounts: accounts.value, live: liveMode ? 1 : 0 };
    const parts = [accounts.sql, 'live_mode = @live'];
    if (f.from) parts.push('created_at >= @from'), (params.from = f.from);
    if (f.until) parts.push('created_at <= @until'), (params.until = f.until);
    if (f.status) parts.push('status = @status'), (params.status = f.status);
    if (f.type) parts.push('type = @type'), (params.type = f.type);
    const where = parts.join(' AND ');
    const ids = (
      this.cached(`SELECT id FROM intents WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`).all({
        ...params,
        limit,
        offset,
      }) as Array<{ id: string }>
    ).map((r) => r.id);
    const counted = !f.from && !f.until && !f.type;
    const total = counted
      ? listCount(this.db, 'intents', accountIds, liveMode, f.status ?? '')
      : (this.cached(`SELECT count(*) AS n FROM intents WHERE ${where}`).get(params) as { n: number }).n;
    return { ids, total };
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
export function salesTotals(
  db: Db,
  fromIso: string,
  untilIso: string,
  liveMode = true,
  accountIds: string[] | null = null,
  origin: string | null = null,
): SalesTotalRow[] {
  return db
    .prepare(
      `SELECT coalesce(p.method, i.type) AS method, i.currency, count(*) AS count, sum(i.amount_in_cents) AS amount_in_cents
       FROM intents i LEFT JOIN payment_intents p ON p.intent_id = i.id
       WHERE i.live_mode = ? AND i.status = 'succeeded' AND i.created_at >= ? AND i.created_at < ?
         AND (? IS NULL OR i.account_id IN (SELECT value FROM json_each(?)))
         AND (? IS NULL OR i.origin = ?)
       GROUP BY 1, 2 ORDER BY 1, 2`,
    )
    .all(
      liveMode ? 1 : 0,
      fromIso,
      untilIso,
      accountIds && JSON.stringify(accountIds),
      accountIds && JSON.stringify(accountIds),
      origin,
      origin,
    ) as SalesTotalRow[];
}
