import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';

export interface ProfileRow {
  account_id: string;
  live_mode: number;
  parent_account_id: string;
  email: string | null;
  verification_status: 'unverified' | 'incomplete' | 'rejected' | 'verified';
  documents: string;
  document_errors: string;
  submitted_at: string | null;
  reviewed_at: string | null;
  verified_at: string | null;
  commission_override_mode: 'none' | 'daily' | null;
  commission_enabled_at: string | null;
  commission_disabled_at: string | null;
  commission_invoiced_through: string | null;
  tax_invoicing_status: 'inactive' | 'active';
  tax_invoicing_public: string;
  tax_invoicing_credentials: string;
  tax_invoicing_activated_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface CommissionInvoiceRow {
  id: string;
  account_id: string;
  live_mode: number;
  platform_account_id: string;
  day: string;
  currency: string;
  commission_in_cents: number;
  vat_in_cents: number;
  total_in_cents: number;
  status: 'pending' | 'issued' | 'failed';
  attempts: number;
  next_attempt_at: string | null;
  document_id: string | null;
  url: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

const PROFILE_COLUMNS = [
  'account_id',
  'live_mode',
  'parent_account_id',
  'email',
  'verification_status',
  'documents',
  'document_errors',
  'submitted_at',
  'reviewed_at',
  'verified_at',
  'commission_override_mode',
  'commission_enabled_at',
  'commission_disabled_at',
  'commission_invoiced_through',
  'tax_invoicing_status',
  'tax_invoicing_public',
  'tax_invoicing_credentials',
  'tax_invoicing_activated_at',
  'created_at',
  'updated_at',
];

/** All SQL of connected-account profiles and commission invoices. */
export class ConnectedStore {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare(`INSERT INTO connected_profiles (${PROFILE_COLUMNS.join(', ')}) VALUES (${PROFILE_COLUMNS.map((c) => `@${c}`).join(', ')})`),
      save: db.prepare(
        `UPDATE connected_profiles SET ${PROFILE_COLUMNS.filter((c) => c !== 'account_id')
          .map((c) => `${c} = @${c}`)
          .join(', ')}
         WHERE account_id = @account_id`,
      ),
      get: db.prepare('SELECT * FROM connected_profiles WHERE account_id = ?'),
      byEmail: db.prepare('SELECT * FROM connected_profiles WHERE parent_account_id = ? AND email = ?'),
      children: db.prepare('SELECT * FROM connected_profiles WHERE parent_account_id = ? ORDER BY created_at, rowid'),
      all: db.prepare('SELECT * FROM connected_profiles ORDER BY created_at, rowid'),
      insertInvoice: db.prepare(
        `INSERT INTO commission_invoices (id, account_id, live_mode, platform_account_id, day, currency, commission_in_cents,
           vat_in_cents, total_in_cents, status, attempts, next_attempt_at, created_at, updated_at)
         VALUES (@id, @account_id, @live_mode, @platform_account_id, @day, @currency, @commission_in_cents,
           @vat_in_cents, @total_in_cents, 'pending', 0, @next_attempt_at, @created_at, @updated_at)
         ON CONFLICT (account_id, day, currency) DO NOTHING`,
      ),
      dueInvoices: db.prepare("SELECT * FROM commission_invoices WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY created_at, rowid"),
      invoice: db.prepare('SELECT * FROM commission_invoices WHERE id = ?'),
      invoicesOf: db.prepare('SELECT * FROM commission_invoices WHERE account_id = ? ORDER BY day, currency'),
      settleInvoice: db.prepare(
        `UPDATE commission_invoices SET status = @status, attempts = @attempts, next_attempt_at = @next_attempt_at,
           document_id = @document_id, url = @url, last_error = @last_error, updated_at = @updated_at
         WHERE id = @id AND status = 'pending'`,
      ),
    };
  }

  insert(row: ProfileRow): void {
    this.s.insert.run(row);
  }
  save(row: ProfileRow): void {
    this.s.save.run(row);
  }
  get(accountId: string): ProfileRow | undefined {
    return this.s.get.get(accountId) as ProfileRow | undefined;
  }
  byEmail(parentId: string, email: string): ProfileRow | undefined {
    return this.s.byEmail.get(parentId, email) as ProfileRow | undefined;
  }
  children(parentId: string): ProfileRow[] {
    return this.s.children.all(parentId) as ProfileRow[];
  }
  all(): ProfileRow[] {
    return this.s.all.all() as ProfileRow[];
  }
  insertInvoice(
    row: Pick<
      CommissionInvoiceRow,
      | 'id'
      | 'account_id'
      | 'live_mode'
      | 'platform_account_id'
      | 'day'
      | 'currency'
      | 'commission_in_cents'
      | 'vat_in_cents'
      | 'total_in_cents'
      | 'next_attempt_at'
      | 'created_at'
      | 'updated_at'
    >,
  ): boolean {
    return this.s.insertInvoice.run(row).changes === 1;
  }
  dueInvoices(now: string): CommissionInvoiceRow[] {
    return this.s.dueInvoices.all(now) as CommissionInvoiceRow[];
  }
  invoice(id: string): CommissionInvoiceRow | undefined {
    return this.s.invoice.get(id) as CommissionInvoiceRow | undefined;
  }
  invoicesOf(accountId: string): CommissionInvoiceRow[] {
    return this.s.invoicesOf.all(accountId) as CommissionInvoiceRow[];
  }
  /** False when another attempt settled it first. */
  settleInvoice(
    r: Pick<CommissionInvoiceRow, 'id' | 'status' | 'attempts' | 'next_attempt_at' | 'document_id' | 'url' | 'last_error' | 'updated_at'>,
  ): boolean {
    return this.s.settleInvoice.run(r).changes === 1;
  }
}

/** The connected-profiles store of a database, its statements prepared once (sync applies one record at a time). */
export const connectedStore = perDb((db) => new ConnectedStore(db));
