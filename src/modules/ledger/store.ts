import type { Db } from '../../db/database.js';
import { listCount, statementCache } from '../../db/list-counts.js';
import { DEEP, deepPage } from '../../db/deep-pages.js';
import { perDb } from '../../db/per-db.js';

export interface BalanceTransactionRow {
  seq: number;
  id: string;
  account_id: string;
  live_mode: number;
  type: string;
  amount_in_cents: number;
  fee_in_cents: number;
  net_amount_in_cents: number;
  currency: string;
  balance_after_in_cents: number;
  commission_in_cents: number;
  vat_withheld_in_cents: number;
  source_id: string;
  source_type: string;
  description: string | null;
  created_at: string;
}

/** Counts and sums of one account, environment, currency and type (reconciliation). */
export interface LedgerTotalRow {
  account_id: string;
  live_mode: number;
  currency: string;
  type: string;
  count: number;
  amount_in_cents: number;
  fee_in_cents: number;
}

export interface LedgerFilter {
  accountIds: string[];
  liveMode: boolean;
  currency?: string;
  type?: string;
  from?: string;
  until?: string;
}

/** All SQL of the ledger. */
export class LedgerStore {
  private readonly stmts;
  private readonly cached;

  constructor(private readonly db: Db) {
    this.cached = statementCache(db);
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO balance_transactions (id, account_id, live_mode, type, amount_in_cents, fee_in_cents, net_amount_in_cents,
           currency, balance_after_in_cents, commission_in_cents, vat_withheld_in_cents, source_id, source_type, description, created_at, origin)
         VALUES (@id, @account_id, @live_mode, @type, @amount_in_cents, @fee_in_cents, @net_amount_in_cents,
           @currency, @balance_after_in_cents, @commission_in_cents, @vat_withheld_in_cents, @source_id, @source_type, @description, @created_at, @origin)`,
      ),
      // `+?`: compiled once, not again on every run (decision 0308, src/modules/terminals/commands/store.ts).
      last: db.prepare('SELECT balance_after_in_cents FROM balance_transactions WHERE account_id = +? AND currency = +? ORDER BY seq DESC LIMIT 1'),
      byId: db.prepare('SELECT * FROM balance_transactions WHERE id = ?'),
      // The last row of each currency carries the running balance: no sum over the whole ledger.
      balances: db.prepare(
        `SELECT b.account_id, b.currency, b.balance_after_in_cents AS balance FROM balance_transactions b
         JOIN (SELECT account_id, currency, max(seq) AS seq FROM balance_transactions
               WHERE account_id IN (SELECT value FROM json_each(?)) AND live_mode = ? GROUP BY account_id, currency) m
           ON m.seq = b.seq`,
      ),
      // \`origin IS ?\`: NULL (rows written on this box) compares like any other origin, on its index.
      totals: db.prepare(
        `SELECT account_id, live_mode, currency, type, count(*) AS count, sum(amount_in_cents) AS amount_in_cents,
           sum(fee_in_cents) AS fee_in_cents
         FROM balance_transactions WHERE origin IS ? AND created_at >= ? AND created_at < ?
         GROUP BY account_id, live_mode, currency, type`,
      ),
    };
  }

  /** `origin`: where the row was first written (src/db/baseline.sql; `rowOrigin` in src/outbox/origins.ts). */
  insert(row: Omit<BalanceTransactionRow, 'seq'>, origin: string | null): void {
    this.stmts.insert.run({ ...row, origin });
  }
  lastBalance(accountId: string, currency: string): number {
    return (this.stmts.last.get(accountId, currency) as { balance_after_in_cents: number } | undefined)?.balance_after_in_cents ?? 0;
  }
  byId(id: string): BalanceTransactionRow | undefined {
    return this.stmts.byId.get(id) as BalanceTransactionRow | undefined;
  }
  balances(accountIds: string[], liveMode: boolean): Array<{ account_id: string; currency: string; balance: number }> {
    return this.stmts.balances.all(JSON.stringify(accountIds), liveMode ? 1 : 0) as Array<{ account_id: string; currency: string; balance: number }>;
  }

  private where(f: LedgerFilter): { sql: string; args: unknown[] } {
    // One account is named with `=`, so balance_transactions_list yields its rows newest first.
    const one = f.accountIds.length === 1;
    const parts = [one ? 'account_id = ?' : 'account_id IN (SELECT value FROM json_each(?))', 'live_mode = ?'];
    const args: unknown[] = [one ? f.accountIds[0] : JSON.stringify(f.accountIds), f.liveMode ? 1 : 0];
    if (f.currency) {
      parts.push('currency = ?');
      args.push(f.currency);
    }
    if (f.type) {
      parts.push('type = ?');
      args.push(f.type);
    }
    if (f.from && f.until) {
      parts.push('created_at >= ? AND created_at <= ?');
      args.push(f.from, f.until);
    }
    return { sql: parts.join(' AND '), args };
  }

  /** Newest first; Total-Count from list_counts when no filter is given, else its range counted. */
  list(f: LedgerFilter, limit: number, offset: number): { rows: BalanceTransactionRow[]; total: number } {
    const w = this.where(f);
    const filtered = f.currency || f.type || (f.from && f.until);
    const count = () =>
      filtered
        ? (this.cached(`SELECT count(*) AS n FROM balance_transactions WHERE ${w.sql}`).get(...w.args) as { n: number }).n
        : listCount(this.db, 'balance_transactions', f.accountIds, f.liveMode);
    const stmt = this.cached(`SELECT * FROM balance_transactions WHERE ${w.sql} ORDER BY seq DESC LIMIT ? OFFSET ?`);
    const deep = offset >= DEEP ? deepPage<BalanceTransactionRow>(this.db, stmt.source, w.args, limit, offset, count) : undefined;
    if (deep) return { rows: deep.rows, total: deep.total! };
    return { rows: stmt.all(...w.args, limit, offset) as BalanceTransactionRow[], total: count() };
  }

  /** Oldest first after a cursor, never past `maxSeq`: a stable walk for statements (reports). */
  after(f: LedgerFilter, afterSeq: number, maxSeq: number, limit: number): BalanceTransactionRow[] {
    const w = this.where(f);
    return this.cached(`SELECT * FROM balance_transactions WHERE ${w.sql} AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`).all(
      ...w.args,
      afterSeq,
      maxSeq,
      limit,
    ) as BalanceTransactionRow[];
  }

  totals(origin: string | null, from: string, until: string): LedgerTotalRow[] {
    return this.stmts.totals.all(origin, from, until) as LedgerTotalRow[];
  }

  highWater(): number {
    return (this.db.prepare('SELECT coalesce(max(seq), 0) AS n FROM balance_transactions').get() as { n: number }).n;
  }
}

export const ledgerStore = perDb((db) => new LedgerStore(db));
