import type { Db } from '../../db/database.js';
import { accountsArg, accountsStatement, listCount } from '../../db/list-counts.js';
import { perDb } from '../../db/per-db.js';

export interface UserRow {
  id: string;
  account_id: string;
  live_mode: number;
  email: string;
  name: string | null;
  phone: string | null;
  created_at: string;
}

/** All SQL of users. */
export class UsersStore {
  private readonly stmts;

  constructor(private readonly db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO users (id, account_id, live_mode, email, name, phone, created_at)
         VALUES (@id, @account_id, @live_mode, @email, @name, @phone, @created_at) ON CONFLICT(account_id, email) DO NOTHING`,
      ),
      byId: db.prepare('SELECT * FROM users WHERE id = ?'),
      byEmail: db.prepare('SELECT * FROM users WHERE account_id = ? AND email = ?'),
      list: accountsStatement(
        db,
        (a) => `SELECT * FROM users WHERE ${a('account_id', '?')} AND live_mode = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
      ),
    };
  }

  insert(row: UserRow): boolean {
    return this.stmts.insert.run(row).changes === 1;
  }
  byId(id: string): UserRow | undefined {
    return this.stmts.byId.get(id) as UserRow | undefined;
  }
  byEmail(accountId: string, email: string): UserRow | undefined {
    return this.stmts.byEmail.get(accountId, email) as UserRow | undefined;
  }
  list(accountIds: string[], liveMode: boolean, limit: number, offset: number): { rows: UserRow[]; total: number } {
    const ids = accountsArg(accountIds);
    const mode = liveMode ? 1 : 0;
    return { rows: this.stmts.list(accountIds).all(ids, mode, limit, offset) as UserRow[], total: listCount(this.db, 'users', accountIds, liveMode) };
  }
}

export const usersStore = perDb((db) => new UsersStore(db));
