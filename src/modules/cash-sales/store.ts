import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';

export interface CashIntentRow {
  id: string;
  account_id: string;
  live_mode: number;
  intent_id: string;
  checkout_id: string;
  amount_in_cents: number;
  currency: string;
  description: string | null;
  tax_id: string | null;
  customer_id: string | null;
  created_at: string;
}

/** All SQL of cash intents. */
export class CashSalesStore {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO cash_intents (id, account_id, live_mode, intent_id, checkout_id, amount_in_cents, currency, description, tax_id, customer_id, created_at)
         VALUES (@id, @account_id, @live_mode, @intent_id, @checkout_id, @amount_in_cents, @currency, @description, @tax_id, @customer_id, @created_at)`,
      ),
      byId: db.prepare('SELECT * FROM cash_intents WHERE id = ?'),
    };
  }

  insert(row: CashIntentRow): void {
    this.stmts.insert.run(row);
  }
  byId(id: string): CashIntentRow | undefined {
    return this.stmts.byId.get(id) as CashIntentRow | undefined;
  }
}

export const cashSalesStore = perDb((db) => new CashSalesStore(db));
