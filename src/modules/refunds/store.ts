import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';

export interface RefundRow {
  id: string;
  account_id: string;
  live_mode: number;
  payment_intent_id: string;
  intent_id: string;
  status: string;
  amount_in_cents: number;
  fee_returned_in_cents: number;
  currency: string;
  reason: string | null;
  balance_transaction_id: string | null;
  created_at: string;
}

/** All SQL of refunds. */
export class RefundsStore {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO refunds (id, account_id, live_mode, payment_intent_id, intent_id, status, amount_in_cents, fee_returned_in_cents,
           currency, reason, balance_transaction_id, created_at)
         VALUES (@id, @account_id, @live_mode, @payment_intent_id, @intent_id, @status, @amount_in_cents, @fee_returned_in_cents,
           @currency, @reason, @balance_transaction_id, @created_at)`,
      ),
      byId: db.prepare('SELECT * FROM refunds WHERE id = ?'),
      byPaymentIntent: db.prepare('SELECT * FROM refunds WHERE payment_intent_id = ?'),
    };
  }

  insert(row: RefundRow): void {
    this.stmts.insert.run(row);
  }
  byId(id: string): RefundRow | undefined {
    return this.stmts.byId.get(id) as RefundRow | undefined;
  }
  byPaymentIntent(id: string): RefundRow | undefined {
    return this.stmts.byPaymentIntent.get(id) as RefundRow | undefined;
  }
}

export const refundsStore = perDb((db) => new RefundsStore(db));
