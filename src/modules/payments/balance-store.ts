import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';

/** The payer's side of a balance payment (src/db/baseline.sql `balance_payments`). */
export interface BalancePaymentRow {
  id: string;
  live_mode: number;
  payment_intent_id: string;
  merchant_account_id: string;
  payer_account_id: string;
  payer_intent_id: string;
  payer_balance_transaction_id: string;
  amount_in_cents: number;
  currency: string;
  created_at: string;
}

/** All SQL of balance payments. */
export class BalancePaymentsStore {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO balance_payments (id, live_mode, payment_intent_id, merchant_account_id, payer_account_id, payer_intent_id,
           payer_balance_transaction_id, amount_in_cents, currency, created_at)
         VALUES (@id, @live_mode, @payment_intent_id, @merchant_account_id, @payer_account_id, @payer_intent_id,
           @payer_balance_transaction_id, @amount_in_cents, @currency, @created_at)`,
      ),
      byPaymentIntent: db.prepare('SELECT * FROM balance_payments WHERE payment_intent_id = ?'),
    };
  }

  insert(row: BalancePaymentRow): void {
    this.stmts.insert.run(row);
  }
  byPaymentIntent(paymentIntentId: string): BalancePaymentRow | undefined {
    return this.stmts.byPaymentIntent.get(paymentIntentId) as BalancePaymentRow | undefined;
  }
}

export const balancePaymentsStore = perDb((db) => new BalancePaymentsStore(db));
