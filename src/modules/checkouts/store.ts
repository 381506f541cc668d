import type { Db } from '../../db/database.js';
import { listCount, statementCache } from '../../db/list-counts.js';
import { DEEP, deepPage } from '../../db/deep-pages.js';
import { perDb } from '../../db/per-db.js';

export interface CheckoutRow {
  id: string;
  account_id: string;
  live_mode: number;
  status: string;
  amount_in_cents: number;
  currency: string;
  items: string;
  metadata: string;
  customer_id: string | null;
  expires_at: string | null;
  latest_intent_id: string | null;
  payment_intent_id: string | null;
  success_url?: string | null;
  cancel_url?: string | null;
  /** JSON array of TransferSetup; '[]' when none. */
  transfer_setups?: string;
  created_at: string;
  updated_at: string;
}

export interface CheckoutFilter {
  status?: string;
  /** ISO times, inclusive. */
  from?: string;
  until?: string;
  /** Only checkouts of these customers (`?user_id=`). */
  customerIds?: string[];
}

/** All SQL of checkouts. */
export class CheckoutsStore {
  private readonly stmts;
  private readonly cached;

  constructor(private readonly db: Db) {
    this.cached = statementCache(db);
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO checkouts (id, account_id, live_mode, status, amount_in_cents, currency, items, metadata, customer_id,
           expires_at, latest_intent_id, payment_intent_id, success_url, cancel_url, transfer_setups, created_at, updated_at)
         VALUES (@id, @account_id, @live_mode, @status, @amount_in_cents, @currency, @items, @metadata, @customer_id,
           @expires_at, @latest_intent_id, @payment_intent_id, @success_url, @cancel_url, @transfer_setups, @created_at, @updated_at)`,
      ),
      setTransferSetups: db.prepare('UPDATE checkouts SET transfer_setups = ? WHERE id = ?'),
      update: db.prepare(
        `UPDATE checkouts SET status = @status, amount_in_cents = @amount_in_cents, currency = @currency, items = @items,
           metadata = @metadata, customer_id = @customer_id, expires_at = @expires_at, latest_intent_id = @latest_intent_id,
           payment_intent_id = @payment_intent_id, success_url = @success_url, cancel_url = @cancel_url, updated_at = @updated_at WHERE id = @id`,
      ),
      byId: db.prepare('SELECT * FROM checkouts WHERE id = ?'),
    };
  }

  insert(row: CheckoutRow): void {
    this.stmts.insert.run({ success_url: null, cancel_url: null, transfer_setups: '[]', ...row });
  }
  update(row: CheckoutRow): void {
    this.stmts.update.run({ success_url: null, cancel_url: null, ...row });
  }
  setTransferSetups(id: string, setups: string): void {
    this.stmts.setTransferSetups.run(setups, id);
  }
  byId(id: string): CheckoutRow | undefined {
    return this.stmts.byId.get(id) as CheckoutRow | undefined;
  }
  /**
   * Newest first. Only the filters given become clauses, and one account is named with `=`, so an
   * index (checkouts_account, or checkouts_status with ?status=) yields the page in its order and the
   * read stops at its last row. Total-Count comes from list_counts unless a time range or customers
   * are asked, which count their range through the same index.
   */
  list(accountIds: string[], liveMode: boolean, limit: number, offset: number, filter: CheckoutFilter = {}): { rows: CheckoutRow[]; total: number } {
    const args: Record<string, unknown> = { mode: liveMode ? 1 : 0 };
    const parts = [accountIds.length === 1 ? 'account_id = @id' : 'account_id IN (SELECT value FROM json_each(@ids))', 'live_mode = @mode'];
    if (accountIds.length === 1) args.id = accountIds[0];
    else args.ids = JSON.stringify(accountIds);
    if (filter.status !== undefined) parts.push('status = @status'), (args.status = filter.status);
    if (filter.from !== undefined) parts.push('created_at >= @from'), (args.from = filter.from);
    if (filter.until !== undefined) parts.push('created_at <= @until'), (args.until = filter.until);
    if (filter.customerIds) parts.push('customer_id IN (SELECT value FROM json_each(@customers))'), (args.customers = JSON.stringify(filter.customerIds));
    const where = parts.join(' AND ');
    const counted = filter.from === undefined && filter.until === undefined && !filter.customerIds;
    const count = () =>
      counted
        ? listCount(this.db, 'checkouts', accountIds, liveMode, filter.status ?? '')
        : (this.cached(`SELECT count(*) AS n FROM checkouts WHERE ${where}`).get(args) as { n: number }).n;
    const stmt = this.cached(`SELECT * FROM checkouts WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`);
    const deep = offset >= DEEP ? deepPage<CheckoutRow>(this.db, stmt.source, args, limit, offset, count) : undefined;
    if (deep) return { rows: deep.rows, total: deep.total! };
    return { rows: stmt.all({ ...args, limit, offset }) as CheckoutRow[], total: count() };
  }
}

export const checkoutsStore = perDb((db) => new CheckoutsStore(db));
