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
  created_at: string;
  updated_at: string;
}

/** All SQL of checkouts. */
export class CheckoutsStore {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO checkouts (id, account_id, live_mode, status, amount_in_cents, currency, items, metadata, customer_id,
           expires_at, latest_intent_id, payment_intent_id, created_at, updated_at)
         VALUES (@id, @account_id, @live_mode, @status, @amount_in_cents, @currency, @items, @metadata, @customer_id,
           @expires_at, @latest_intent_id, @payment_intent_id, @created_at, @updated_at)`,
      ),
      update: db.prepare(
        `UPDATE checkouts SET status = @status, amount_in_cents = @amount_in_cents, currency = @currency, items = @items,
           metadata = @metadata, customer_id = @customer_id, expires_at = @expires_at, latest_intent_id = @latest_intent_id,
           payment_intent_id = @payment_intent_id, updated_at = @updated_at WHERE id = @id`,
      ),
      byId: db.prepare('SELECT * FROM checkouts WHERE id = ?'),
      list: db.prepare(
        `SELECT * FROM checkouts WHERE account_id IN (SELECT value FROM json_each(?)) AND live_mode = ?
         ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
      ),
      count: db.prepare('SELECT count(*) AS n FROM checkouts WHERE account_id IN (SELECT value FROM json_each(?)) AND live_mode = ?'),
    };
  }

  insert(row: CheckoutRow): void {
    this.stmts.insert.run(row);
  }
  update(row: CheckoutRow): void {
    this.stmts.update.run(row);
  }
  byId(id: string): CheckoutRow | undefined {
    return this.stmts.byId.get(id) as CheckoutRow | undefined;
  }
  list(accountIds: string[], liveMode: boolean, limit: number, offset: number): { rows: CheckoutRow[]; total: number } {
    const ids = JSON.stringify(accountIds);
    const mode = liveMode ? 1 : 0;
    return { rows: this.stmts.list.all(ids, mode, limit, offset) as CheckoutRow[], total: (this.stmts.count.get(ids, mode) as { n: number }).n };
  }
}

export const checkoutsStore = perDb((db) => new CheckoutsStore(db));
