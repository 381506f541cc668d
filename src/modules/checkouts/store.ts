import type { Db } from '../../db/database.js';
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

  constructor(db: Db) {
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
      // Optional filters are NULL when absent, so one statement serves every combination.
      list: db.prepare(
        `SELECT * FROM checkouts WHERE account_id IN (SELECT value FROM json_each(@ids)) AND live_mode = @mode
           AND (@status IS NULL OR status = @status) AND (@from IS NULL OR created_at >= @from) AND (@until IS NULL OR created_at <= @until)
           AND (@customers IS NULL OR customer_id IN (SELECT value FROM json_each(@customers)))
         ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`,
      ),
      count: db.prepare(
        `SELECT count(*) AS n FROM checkouts WHERE account_id IN (SELECT value FROM json_each(@ids)) AND live_mode = @mode
           AND (@status IS NULL OR status = @status) AND (@from IS NULL OR created_at >= @from) AND (@until IS NULL OR created_at <= @until)
           AND (@customers IS NULL OR customer_id IN (SELECT value FROM json_each(@customers)))`,
      ),
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
  list(accountIds: string[], liveMode: boolean, limit: number, offset: number, filter: CheckoutFilter = {}): { rows: CheckoutRow[]; total: number } {
    const where = { ids: JSON.stringify(accountIds), mode: liveMode ? 1 : 0, status: filter.status ?? null, from: filter.from ?? null, until: filter.until ?? null,
      customers: filter.customerIds ? JSON.stringify(filter.customerIds) : null };
    return { rows: this.stmts.list.all({ ...where, limit, offset }) as CheckoutRow[], total: (this.stmts.count.get(where) as { n: number }).n };
  }
}

export const checkoutsStore = perDb((db) => new CheckoutsStore(db));
