import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';

export interface CustomerRow {
  id: string;
  account_id: string;
  live_mode: number;
  merchant_id: string;
  email: string | null;
  full_name: string | null;
  phone: string | null;
  tax_id: string | null;
  created_at: string;
  became_live_at: string | null;
}

/** All SQL of customers. */
export class CustomersStore {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO customers (id, account_id, live_mode, merchant_id, email, full_name, phone, tax_id, created_at)
         VALUES (@id, @account_id, @live_mode, @merchant_id, @email, @full_name, @phone, @tax_id, @created_at)`,
      ),
      byId: db.prepare('SELECT * FROM customers WHERE id = ?'),
      byEmail: db.prepare('SELECT * FROM customers WHERE merchant_id = ? AND live_mode = ? AND email = ?'),
      fill: db.prepare(
        `UPDATE customers SET full_name = coalesce(full_name, @full_name), phone = coalesce(phone, @phone),
           tax_id = coalesce(tax_id, @tax_id) WHERE id = @id`,
      ),
      makeLive: db.prepare(
        `UPDATE customers SET live_mode = 1, became_live_at = ? WHERE id = ? AND live_mode = 0
           AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.merchant_id = customers.merchant_id AND c.live_mode = 1 AND c.email = customers.email)`,
      ),
      list: db.prepare(
        `SELECT * FROM customers WHERE merchant_id IN (SELECT value FROM json_each(?)) AND live_mode IN (SELECT value FROM json_each(?))
         ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
      ),
      count: db.prepare(
        `SELECT count(*) AS n FROM customers WHERE merchant_id IN (SELECT value FROM json_each(?)) AND live_mode IN (SELECT value FROM json_each(?))`,
      ),
    };
  }

  insert(row: Omit<CustomerRow, 'became_live_at'>): void {
    this.stmts.insert.run(row);
  }
  byId(id: string): CustomerRow | undefined {
    return this.stmts.byId.get(id) as CustomerRow | undefined;
  }
  byEmail(merchantId: string, liveMode: boolean, email: string): CustomerRow | undefined {
    return this.stmts.byEmail.get(merchantId, liveMode ? 1 : 0, email) as CustomerRow | undefined;
  }
  fill(id: string, data: { full_name: string | null; phone: string | null; tax_id: string | null }): void {
    this.stmts.fill.run({ id, ...data });
  }
  makeLive(id: string, at: string): boolean {
    return this.stmts.makeLive.run(at, id).changes === 1;
  }
  list(merchantIds: string[], modes: number[], limit: number, offset: number): { rows: CustomerRow[]; total: number } {
    const m = JSON.stringify(merchantIds);
    const l = JSON.stringify(modes);
    return {
      rows: this.stmts.list.all(m, l, limit, offset) as CustomerRow[],
      total: (this.stmts.count.get(m, l) as { n: number }).n,
    };
  }
}

export const customersStore = perDb((db) => new CustomersStore(db));
