import type { Db } from '../../db/database.js';
import { listCount } from '../../db/list-counts.js';
import { DEEP, deepPage } from '../../db/deep-pages.js';
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
  address: string | null;
  /** JSON object, or null when none was given. */
  metadata: string | null;
  created_at: string;
  became_live_at: string | null;
}

export type CustomerDetails = Pick<CustomerRow, 'full_name' | 'phone' | 'tax_id' | 'address' | 'metadata'>;

/**
 * Which customers a key of one environment sees (spec 5 rule 7). A live key: live customers and the
 * live account's own customers on their way to a first real payment, never one only a sandbox made.
 * A test key: test customers not yet live.
 */
const SCOPE = `(CASE WHEN @live = 1 THEN live_mode = 1 OR account_id = merchant_id ELSE live_mode = 0 END)`;

/** `?user_id=`: the customers of one account with the user's e-mail (NULLs: no filter). */
const OF_USER = `AND (@of_account IS NULL OR account_id = @of_account) AND (@of_email IS NULL OR email = @of_email)`;

/** All SQL of customers. */
export class CustomersStore {
  private readonly stmts;

  constructor(private readonly db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO customers (id, account_id, live_mode, merchant_id, email, full_name, phone, tax_id, address, metadata, created_at)
         VALUES (@id, @account_id, @live_mode, @merchant_id, @email, @full_name, @phone, @tax_id, @address, @metadata, @created_at)`,
      ),
      byId: db.prepare('SELECT * FROM customers WHERE id = ?'),
      byEmail: db.prepare('SELECT * FROM customers WHERE merchant_id = ? AND live_mode = ? AND email = ?'),
      fill: db.prepare(
        `UPDATE customers SET full_name = coalesce(full_name, @full_name), phone = coalesce(phone, @phone),
           tax_id = coalesce(tax_id, @tax_id), address = coalesce(address, @address), metadata = coalesce(metadata, @metadata)
         WHERE id = @id`,
      ),
      update: db.prepare(
        `UPDATE customers SET email = @email, full_name = @full_name, phone = @phone, tax_id = @tax_id, address = @address,
           metadata = @metadata WHERE id = @id`,
      ),
      // A customer that goes live belongs to the live account from then on (spec 5 rule 7): it
      // never keeps reporting the sandbox that first met it.
      makeLive: db.prepare(
        `UPDATE customers SET live_mode = 1, became_live_at = ?, account_id = merchant_id WHERE id = ? AND live_mode = 0
           AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.merchant_id = customers.merchant_id AND c.live_mode = 1 AND c.email = customers.email)`,
      ),
      claim: db.prepare('UPDATE customers SET account_id = ? WHERE id = ? AND live_mode = 0'),
      // One merchant named with `=` (the usual key), so customers_merchant yields the page in its order.
      list: db.prepare(
        `SELECT * FROM customers WHERE merchant_id = @merchant AND ${SCOPE} ${OF_USER} ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`,
      ),
      listMany: db.prepare(
        `SELECT * FROM customers WHERE merchant_id IN (SELECT value FROM json_each(@merchants)) AND ${SCOPE} ${OF_USER}
         ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`,
      ),
      count: db.prepare(`SELECT count(*) AS n FROM customers WHERE merchant_id IN (SELECT value FROM json_each(@merchants)) AND ${SCOPE} ${OF_USER}`),
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
  fill(id: string, data: CustomerDetails): void {
    this.stmts.fill.run({ id, ...data });
  }
  /** Every detail as given (a PUT/PATCH has already merged the unchanged ones in). */
  update(id: string, data: CustomerDetails & { email: string | null }): void {
    this.stmts.update.run({ id, ...data });
  }
  makeLive(id: string, at: string): boolean {
    return this.stmts.makeLive.run(at, id).changes === 1;
  }
  /** A live key that meets a sandbox's customer by e-mail takes it onto the live side. */
  claim(id: string, accountId: string): void {
    this.stmts.claim.run(accountId, id);
  }
  list(
    merchantIds: string[],
    liveMode: boolean,
    limit: number,
    offset: number,
    ofUser?: { accountId: string; email: string },
  ): { rows: CustomerRow[]; total: number } {
    const p = { merchants: JSON.stringify(merchantIds), live: liveMode ? 1 : 0, of_account: ofUser?.accountId ?? null, of_email: ofUser?.email ?? null };
    const [stmt, args] = merchantIds.length === 1 ? [this.stmts.list, { ...p, merchant: merchantIds[0] }] : [this.stmts.listMany, p];
    // Each environment's view per merchant is counted by the table's triggers (list_counts, the
    // merchant as account, the view as live_mode); a user's customers are counted in their range.
    const count = () => (ofUser ? (this.stmts.count.get(p) as { n: number }).n : listCount(this.db, 'customers', merchantIds, liveMode));
    const deep = offset >= DEEP ? deepPage<CustomerRow>(this.db, stmt.source, args, limit, offset, count) : undefined;
    if (deep) return { rows: deep.rows, total: deep.total! };
    return { rows: stmt.all({ ...args, limit, offset }) as CustomerRow[], total: count() };
  }
}

export const customersStore = perDb((db) => new CustomersStore(db));
