import type { Db } from '../../db/database.js';

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

/** All SQL of unified intents. */
export class IntentsStore {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO intents (id, account_id, live_mode, type, status, raw_status, legacy_id, payment_id, receipt_number,
           amount_in_cents, currency, customer_id, checkout_id, tax_invoice_url, details, created_at)
         VALUES (@id, @account_id, @live_mode, @type, @status, @raw_status, @legacy_id, @payment_id, @receipt_number,
           @amount_in_cents, @currency, @customer_id, @checkout_id, @tax_invoice_url, @details, @created_at)`,
      ),
      byId: db.prepare('SELECT * FROM intents WHERE id = ?'),
      byLegacyId: db.prepare('SELECT * FROM intents WHERE legacy_id = ?'),
      nextReceipt: db.prepare('SELECT coalesce(max(receipt_number), 0) + 1 AS n FROM intents WHERE account_id = ?'),
      setInvoiceUrl: db.prepare('UPDATE intents SET tax_invoice_url = ? WHERE id = ?'),
    };
  }

  insert(row: IntentRow): void {
    this.stmts.insert.run(row);
  }
  byId(id: string): IntentRow | undefined {
    return this.stmts.byId.get(id) as IntentRow | undefined;
  }
  byLegacyId(id: string): IntentRow | undefined {
    return this.stmts.byLegacyId.get(id) as IntentRow | undefined;
  }
  nextReceiptNumber(accountId: string): number {
    return (this.stmts.nextReceipt.get(accountId) as { n: number }).n;
  }
  setTaxInvoiceUrl(id: string, url: string | null): void {
    this.stmts.setInvoiceUrl.run(url, id);
  }
}

const stores = new WeakMap<Db, IntentsStore>();

export function intentsStore(db: Db): IntentsStore {
  let s = stores.get(db);
  if (!s) {
    s = new IntentsStore(db);
    stores.set(db, s);
  }
  return s;
}
