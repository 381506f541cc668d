import type { Db } from '../../db/database.js';
import { accountsArg, accountsStatement, listCount } from '../../db/list-counts.js';
import { DEEP, deepPage } from '../../db/deep-pages.js';
import { perDb } from '../../db/per-db.js';

export interface ProductRow {
  id: string;
  account_id: string;
  live_mode: number;
  name: string;
  description: string | null;
  tax_category: 'good' | 'service';
  status: 'active' | 'archived';
  metadata: string;
  /** JSON of the hosted checkout-page settings; a store that learns a product by feed keeps '{}'. */
  page_settings?: string;
  /** Units left to sell (hosted `inventory_quantity`); null: not counted. */
  inventory_quantity?: number | null;
  created_at: string;
  updated_at: string;
}

export interface PriceRow {
  id: string;
  account_id: string;
  live_mode: number;
  product_id: string;
  amount_in_cents: number;
  currency: string;
  charge_type: 'one_time' | 'recurring';
  billing_interval: string | null;
  billing_interval_count: number | null;
  /** Spec 6.4: a recurring price may start with a free trial of this length (no charge until it ends). */
  free_trial_interval: 'day' | 'week' | 'month' | 'year' | null;
  free_trial_interval_count: number | null;
  /** Hosted price fields: the subscription ends by itself after this many paid periods. */
  periods_before_automatic_cancellation?: number | null;
  /** Hosted price fields: a requested cancel is refused before this many paid periods. */
  periods_before_allowed_to_cancel?: number | null;
  created_at: string;
  /** Set by `_destroy`: no longer offered; what names it keeps it. */
  deleted_at?: string | null;
}

/** All SQL of products and prices. */
export class ProductsStore {
  private readonly stmts;

  constructor(private readonly db: Db) {
    this.stmts = {
      insertProduct: db.prepare(
        `INSERT INTO products (id, account_id, live_mode, name, description, tax_category, status, metadata, page_settings, inventory_quantity, created_at, updated_at)
         VALUES (@id, @account_id, @live_mode, @name, @description, @tax_category, @status, @metadata, @page_settings, @inventory_quantity, @created_at, @updated_at)`,
      ),
      updateProduct: db.prepare(
        `UPDATE products SET name = @name, description = @description, tax_category = @tax_category, status = @status,
           metadata = @metadata, page_settings = @page_settings, inventory_quantity = @inventory_quantity, updated_at = @updated_at WHERE id = @id`,
      ),
      // A paid checkout's units: never below 0 (a checkout opened before the last unit sold still sells).
      takeInventory: db.prepare(
        'UPDATE products SET inventory_quantity = max(inventory_quantity - ?, 0), updated_at = ? WHERE id = ? AND inventory_quantity IS NOT NULL',
      ),
      changePrice: db.prepare('UPDATE prices SET amount_in_cents = @amount_in_cents, currency = @currency WHERE id = @id'),
      deletePrice: db.prepare('UPDATE prices SET deleted_at = @at WHERE id = @id AND deleted_at IS NULL'),
      insertPrice: db.prepare(
        `INSERT INTO prices (id, account_id, live_mode, product_id, amount_in_cents, currency, charge_type, billing_interval, billing_interval_count, free_trial_interval, free_trial_interval_count,
           periods_before_automatic_cancellation, periods_before_allowed_to_cancel, created_at)
         VALUES (@id, @account_id, @live_mode, @product_id, @amount_in_cents, @currency, @charge_type, @billing_interval, @billing_interval_count, @free_trial_interval, @free_trial_interval_count,
           @periods_before_automatic_cancellation, @periods_before_allowed_to_cancel, @created_at)`,
      ),
      product: db.prepare('SELECT * FROM products WHERE id = ?'),
      price: db.prepare('SELECT * FROM prices WHERE id = ?'),
      prices: db.prepare('SELECT * FROM prices WHERE product_id = ? ORDER BY created_at, rowid'),
      list: accountsStatement(
        db,
        (a) => `SELECT * FROM products WHERE ${a('account_id', '?')} AND live_mode = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
      ),
      // A product learnt from the central: inserted, or brought to the central's newer state.
      upsertProduct: db.prepare(
        `INSERT INTO products (id, account_id, live_mode, name, description, tax_category, status, metadata, created_at, updated_at)
         VALUES (@id, @account_id, @live_mode, @name, @description, @tax_category, @status, @metadata, @created_at, @updated_at)
         ON CONFLICT(id) DO UPDATE SET name = excluded.name, description = excluded.description, tax_category = excluded.tax_category,
           status = excluded.status, metadata = excluded.metadata, updated_at = excluded.updated_at
         WHERE excluded.updated_at >= products.updated_at`,
      ),
    };
  }

  insertProduct(row: ProductRow): void {
    this.stmts.insertProduct.run({ ...row, page_settings: row.page_settings ?? '{}', inventory_quantity: row.inventory_quantity ?? null });
  }
  updateProduct(row: ProductRow): void {
    this.stmts.updateProduct.run({ ...row, page_settings: row.page_settings ?? '{}', inventory_quantity: row.inventory_quantity ?? null });
  }
  takeInventory(productId: string, units: number, at: string): void {
    this.stmts.takeInventory.run(units, at, productId);
  }
  changePrice(id: string, amountInCents: number, currency: string): void {
    this.stmts.changePrice.run({ id, amount_in_cents: amountInCents, currency });
  }
  deletePrice(id: string, at: string): void {
    this.stmts.deletePrice.run({ id, at });
  }
  insertPrice(row: PriceRow): void {
    // A price fed by an older central lacks the period fields.
    this.stmts.insertPrice.run({
      ...row,
      periods_before_automatic_cancellation: row.periods_before_automatic_cancellation ?? null,
      periods_before_allowed_to_cancel: row.periods_before_allowed_to_cancel ?? null,
    });
  }
  upsertProduct(row: ProductRow): void {
    this.stmts.upsertProduct.run(row);
  }
  product(id: string): ProductRow | undefined {
    return this.stmts.product.get(id) as ProductRow | undefined;
  }
  price(id: string): PriceRow | undefined {
    return this.stmts.price.get(id) as PriceRow | undefined;
  }
  prices(productId: string): PriceRow[] {
    return this.stmts.prices.all(productId) as PriceRow[];
  }
  list(accountIds: string[], liveMode: boolean, limit: number, offset: number): { rows: ProductRow[]; total: number } {
    const stmt = this.stmts.list(accountIds);
    const args = [accountsArg(accountIds), liveMode ? 1 : 0];
    const count = () => listCount(this.db, 'products', accountIds, liveMode);
    const deep = offset >= DEEP ? deepPage<ProductRow>(this.db, stmt.source, args, limit, offset, count) : undefined;
    if (deep) return { rows: deep.rows, total: deep.total! };
    return { rows: stmt.all(...args, limit, offset) as ProductRow[], total: count() };
  }
}

export const productsStore = perDb((db) => new ProductsStore(db));
