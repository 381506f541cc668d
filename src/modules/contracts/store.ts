import type { Db } from '../../db/database.js';
import { accountsArg, accountsStatement, listCount } from '../../db/list-counts.js';
import type { ContractStatus } from './machine.js';
import { preparedOnUse } from '../../db/statements.js';

export interface TemplateRow {
  id: string;
  account_id: string;
  live_mode: number;
  name: string;
  body: string;
  signature_required_before: 'confirmation' | 'visit' | 'none';
  signature_valid_for_months: number | null;
  fields: string;
  service_ids: string;
  created_at: string;
}

export interface ContractRow {
  id: string;
  account_id: string;
  live_mode: number;
  template_id: string;
  customer_id: string;
  customer: string;
  booking_id: string | null;
  checkout_id: string | null;
  title: string;
  body: string;
  status: ContractStatus;
  sent_via: 'messaging' | 'email' | 'link' | null;
  signing_token: string;
  signing_url: string;
  field_values: string;
  verified_channel: 'messaging' | 'email' | 'sandbox' | null;
  body_sha256: string | null;
  pdf_file: string | null;
  code_hash: string | null;
  code_channel: string | null;
  code_expires_at: string | null;
  code_attempts: number;
  viewed_at: string | null;
  signed_at: string | null;
  valid_until: string | null;
  declined_at: string | null;
  decline_reason: string | null;
  reminder_sent_at: string | null;
  expires_at: string;
  created_at: string;
  updated_at: string;
}

const T_COLS = [
  'id',
  'account_id',
  'live_mode',
  'name',
  'body',
  'signature_required_before',
  'signature_valid_for_months',
  'fields',
  'service_ids',
  'created_at',
];
const C_COLS = [
  'id',
  'account_id',
  'live_mode',
  'template_id',
  'customer_id',
  'customer',
  'booking_id',
  'checkout_id',
  'title',
  'body',
  'status',
  'sent_via',
  'signing_token',
  'signing_url',
  'field_values',
  'verified_channel',
  'body_sha256',
  'pdf_file',
  'code_hash',
  'code_channel',
  'code_expires_at',
  'code_attempts',
  'viewed_at',
  'signed_at',
  'valid_until',
  'declined_at',
  'decline_reason',
  'reminder_sent_at',
  'expires_at',
  'created_at',
  'updated_at',
];

/** All SQL of contract templates and contracts. */
export class ContractsStore {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = preparedOnUse({
      insertT: () => db.prepare(`INSERT INTO contract_templates (${T_COLS.join(', ')}) VALUES (${T_COLS.map((c) => `@${c}`).join(', ')})`),
      getT: () => db.prepare('SELECT * FROM contract_templates WHERE id = ?'),
      listT: () =>
        accountsStatement(
          db,
          (a) =>
            `SELECT * FROM contract_templates WHERE ${a('account_id', '@ids')} AND live_mode = @live ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`,
        ),
      insertC: () => db.prepare(`INSERT INTO contracts (${C_COLS.join(', ')}) VALUES (${C_COLS.map((c) => `@${c}`).join(', ')})`),
      saveC: () =>
        db.prepare(
          `UPDATE contracts SET ${C_COLS.filter((c) => c !== 'id')
            .map((c) => `${c} = @${c}`)
            .join(', ')} WHERE id = @id`,
        ),
      getC: () => db.prepare('SELECT * FROM contracts WHERE id = ?'),
      byToken: () => db.prepare('SELECT * FROM contracts WHERE signing_token = ?'),
      byCheckout: () => db.prepare('SELECT * FROM contracts WHERE checkout_id = ?'),
      listC: () =>
        accountsStatement(
          db,
          (a) =>
            `SELECT * FROM contracts WHERE ${a('account_id', '@ids')} AND live_mode = @live ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`,
        ),
      covering: () =>
        db.prepare(
          `SELECT * FROM contracts WHERE account_id = ? AND customer_id = ? AND template_id = ? AND status = 'signed'
           AND valid_until IS NOT NULL AND valid_until > ? ORDER BY signed_at DESC LIMIT 1`,
        ),
      // A central leaves reminders and expiry of a store's contracts to that store (sync).
      open: () => db.prepare("SELECT * FROM contracts WHERE status IN ('sent', 'viewed') AND origin_store_id IS NULL ORDER BY created_at, rowid"),
      setOrigin: () => db.prepare('UPDATE contracts SET origin_store_id = ? WHERE id = ?'),
      unrendered: () => db.prepare("SELECT * FROM contracts WHERE status = 'signed' AND pdf_file IS NULL"),
    });
  }

  insertTemplate(r: TemplateRow): void {
    this.s.insertT.run(r);
  }
  template(id: string): TemplateRow | undefined {
    return this.s.getT.get(id) as TemplateRow | undefined;
  }
  templates(ids: string[], live: boolean, limit: number, offset: number): { rows: TemplateRow[]; total: number } {
    const p = { ids: accountsArg(ids), live: live ? 1 : 0 };
    return { rows: this.s.listT(ids).all({ ...p, limit, offset }) as TemplateRow[], total: listCount(this.db, 'contract_templates', ids, live) };
  }
  insert(r: ContractRow): void {
    this.s.insertC.run(r);
  }
  save(r: ContractRow): void {
    this.s.saveC.run(r);
  }
  get(id: string): ContractRow | undefined {
    return this.s.getC.get(id) as ContractRow | undefined;
  }
  byToken(token: string): ContractRow | undefined {
    return this.s.byToken.get(token) as ContractRow | undefined;
  }
  byCheckout(checkoutId: string): ContractRow | undefined {
    return this.s.byCheckout.get(checkoutId) as ContractRow | undefined;
  }
  list(ids: string[], live: boolean, limit: number, offset: number): { rows: ContractRow[]; total: number } {
    const p = { ids: accountsArg(ids), live: live ? 1 : 0 };
    return { rows: this.s.listC(ids).all({ ...p, limit, offset }) as ContractRow[], total: listCount(this.db, 'contracts', ids, live) };
  }
  covering(accountId: string, customerId: string, templateId: string, now: string): ContractRow | undefined {
    return this.s.covering.get(accountId, customerId, templateId, now) as ContractRow | undefined;
  }
  /** At a central: the store that made this contract and runs its reminders and expiry. */
  setOrigin(id: string, storeId: string): void {
    this.s.setOrigin.run(storeId, id);
  }
  open(): ContractRow[] {
    return this.s.open.all() as ContractRow[];
  }
  unrendered(): ContractRow[] {
    return this.s.unrendered.all() as ContractRow[];
  }
}
