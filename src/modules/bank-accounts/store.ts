import type { Db } from '../../db/database.js';
import { accountsArg, accountsStatement } from '../../db/list-counts.js';
import { perDb } from '../../db/per-db.js';

export interface BankAccountRow {
  id: string;
  account_id: string;
  live_mode: number;
  holder_name: string;
  number: string;
  bank_name: string;
  bank_code: string;
  currency: 'GTQ' | 'USD';
  account_type: 'monetaria' | 'ahorro';
  is_preferred: number;
  status: 'active' | 'archived';
  created_at: string;
  archived_at: string | null;
}

class BankAccountsStore {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO bank_accounts (id, account_id, live_mode, holder_name, number, bank_name, bank_code, currency,
           account_type, is_preferred, status, created_at, archived_at)
         VALUES (@id, @account_id, @live_mode, @holder_name, @number, @bank_name, @bank_code, @currency,
           @account_type, @is_preferred, @status, @created_at, @archived_at)`,
      ),
      get: db.prepare('SELECT * FROM bank_accounts WHERE id = ? AND live_mode = ?'),
      listActive: accountsStatement(
        db,
        (a) =>
          `SELECT * FROM bank_accounts WHERE ${a('account_id', '?')} AND live_mode = ? AND status = 'active' ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
      ),
      // An account's own bank accounts are a handful: counted through the index range.
      countActive: accountsStatement(
        db,
        (a) => `SELECT count(*) AS n FROM bank_accounts WHERE ${a('account_id', '?')} AND live_mode = ? AND status = 'active'`,
      ),
      unsetPreferred: db.prepare(
        'UPDATE bank_accounts SET is_preferred = 0 WHERE account_id = ? AND live_mode = ? AND currency = ? AND is_preferred = 1 AND id <> ?',
      ),
      setPreferred: db.prepare('UPDATE bank_accounts SET is_preferred = ? WHERE id = ?'),
      archive: db.prepare(`UPDATE bank_accounts SET status = 'archived', is_preferred = 0, archived_at = ? WHERE id = ? AND status = 'active'`),
    };
  }

  insert(row: BankAccountRow): void {
    this.s.insert.run(row);
  }
  get(id: string, liveMode: boolean): BankAccountRow | undefined {
    return this.s.get.get(id, liveMode ? 1 : 0) as BankAccountRow | undefined;
  }
  listActive(accountIds: string[], liveMode: boolean, limit: number, offset: number): { rows: BankAccountRow[]; total: number } {
    const ids = accountsArg(accountIds);
    const lm = liveMode ? 1 : 0;
    return {
      rows: this.s.listActive(accountIds).all(ids, lm, limit, offset) as BankAccountRow[],
      total: (this.s.countActive(accountIds).get(ids, lm) as { n: number }).n,
    };
  }
  /** Clears the preferred flag of the account's other bank accounts in that currency. */
  unsetOtherPreferred(row: Pick<BankAccountRow, 'id' | 'account_id' | 'live_mode' | 'currency'>): number {
    return this.s.unsetPreferred.run(row.account_id, row.live_mode, row.currency, row.id).changes;
  }
  setPreferred(id: string, preferred: boolean): void {
    this.s.setPreferred.run(preferred ? 1 : 0, id);
  }
  archive(id: string, at: string): boolean {
    return this.s.archive.run(at, id).changes === 1;
  }
}

export const bankAccountsStore = perDb((db) => new BankAccountsStore(db));
