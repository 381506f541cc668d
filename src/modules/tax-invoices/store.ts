import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';

export interface TaxInvoiceRow {
  id: string;
  account_id: string;
  live_mode: number;
  intent_id: string;
  tax_id: string;
  status: 'pending' | 'issued';
  document_id: string | null;
  url: string | null;
  attempts: number;
  last_error: string | null;
  request: string;
  created_at: string;
  issued_at: string | null;
}

/** All SQL of tax invoices. */
export class TaxInvoicesStore {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO tax_invoices (id, account_id, live_mode, intent_id, tax_id, status, document_id, url, attempts, last_error, request, created_at, issued_at)
         VALUES (@id, @account_id, @live_mode, @intent_id, @tax_id, @status, @document_id, @url, @attempts, @last_error, @request, @created_at, @issued_at)`,
      ),
      byId: db.prepare('SELECT * FROM tax_invoices WHERE id = ?'),
      pending: db.prepare(`SELECT * FROM tax_invoices WHERE status = 'pending' ORDER BY created_at, id LIMIT ?`),
      issued: db.prepare(
        `UPDATE tax_invoices SET status = 'issued', document_id = ?, url = ?, attempts = attempts + 1, last_error = NULL, issued_at = ?
         WHERE id = ? AND status = 'pending'`,
      ),
      livePending: db.prepare(`SELECT count(*) AS n FROM tax_invoices WHERE status = 'pending' AND live_mode = 1`),
      failed: db.prepare(`UPDATE tax_invoices SET attempts = attempts + 1, last_error = ? WHERE id = ? AND status = 'pending'`),
    };
  }

  insert(row: TaxInvoiceRow): void {
    this.stmts.insert.run(row);
  }
  byId(id: string): TaxInvoiceRow | undefined {
    return this.stmts.byId.get(id) as TaxInvoiceRow | undefined;
  }
  pending(limit: number): TaxInvoiceRow[] {
    return this.stmts.pending.all(limit) as TaxInvoiceRow[];
  }
  markIssued(id: string, documentId: string, url: string, at: string): boolean {
    return this.stmts.issued.run(documentId, url, at, id).changes === 1;
  }
  livePending(): number {
    return (this.stmts.livePending.get() as { n: number }).n;
  }
  markFailed(id: string, error: string): void {
    this.stmts.failed.run(error.slice(0, 500), id);
  }
}

export const taxInvoicesStore = perDb((db) => new TaxInvoicesStore(db));
