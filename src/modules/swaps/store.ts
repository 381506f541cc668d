import type { Db } from '../../db/database.js';
import { accountsArg, accountsStatement, listCount } from '../../db/list-counts.js';
import { perDb } from '../../db/per-db.js';
import type { SwapStatus } from './machine.js';

export interface SwapRow {
  id: string;
  account_id: string;
  live_mode: number;
  status: SwapStatus;
  from_currency: string;
  to_currency: string;
  amount_in_cents: number;
  to_amount_in_cents: number;
  network: string;
  transaction_hash: string | null;
  failure_reason: string | null;
  balance_transaction_id: string;
  to_balance_transaction_id: string | null;
  return_balance_transaction_id: string | null;
  created_at: string;
  updated_at: string;
}

/** All SQL of swaps. */
export class SwapsStore {
  private readonly stmts;

  constructor(private readonly db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO swaps (id, account_id, live_mode, status, from_currency, to_currency, amount_in_cents, to_amount_in_cents, network,
           transaction_hash, failure_reason, balance_transaction_id, to_balance_transaction_id, return_balance_transaction_id, created_at, updated_at)
         VALUES (@id, @account_id, @live_mode, @status, @from_currency, @to_currency, @amount_in_cents, @to_amount_in_cents, @network,
           @transaction_hash, @failure_reason, @balance_transaction_id, @to_balance_transaction_id, @return_balance_transaction_id, @created_at, @updated_at)`,
      ),
      byId: db.prepare('SELECT * FROM swaps WHERE id = ?'),
      // Only a pending swap moves: a second writer finds it settled and changes nothing.
      settle: db.prepare(
        `UPDATE swaps SET status = @status, transaction_hash = @transaction_hash, failure_reason = @failure_reason,
           to_balance_transaction_id = @to_balance_transaction_id, return_balance_transaction_id = @return_balance_transaction_id, updated_at = @updated_at
         WHERE id = @id AND status = 'pending'`,
      ),
      list: accountsStatement(
        db,
        (a) => `SELECT * FROM swaps WHERE ${a('account_id', '?')} AND live_mode = ? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`,
      ),
    };
  }

  insert(row: SwapRow): void {
    this.stmts.insert.run(row);
  }
  byId(id: string): SwapRow | undefined {
    return this.stmts.byId.get(id) as SwapRow | undefined;
  }
  settle(row: SwapRow): boolean {
    const { id, status, transaction_hash, failure_reason, to_balance_transaction_id, return_balance_transaction_id, updated_at } = row;
    return (
      this.stmts.settle.run({ id, status, transaction_hash, failure_reason, to_balance_transaction_id, return_balance_transaction_id, updated_at }).changes ===
      1
    );
  }
  list(accountIds: string[], liveMode: boolean, limit: number, offset: number): { rows: SwapRow[]; total: number } {
    const rows = this.stmts.list(accountIds).all(accountsArg(accountIds), liveMode ? 1 : 0, limit, offset) as SwapRow[];
    const total = listCount(this.db, 'swaps', accountIds, liveMode);
    return { rows, total };
  }
}

export const swapsStore = perDb((db) => new SwapsStore(db));
