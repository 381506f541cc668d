import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';
import type { DisputeStatus } from './machine.js';

export interface DisputeRow {
  id: string;
  account_id: string;
  live_mode: number;
  payment_intent_id: string;
  intent_id: string;
  status: DisputeStatus;
  reason: string;
  amount_in_cents: number;
  currency: string;
  balance_transaction_id: string;
  reversal_balance_transaction_id: string | null;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
}

/** All SQL of disputes. */
class DisputesStore {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO disputes (id, account_id, live_mode, payment_intent_id, intent_id, status, reason, amount_in_cents, currency,
           balance_transaction_id, reversal_balance_transaction_id, created_at, updated_at, closed_at)
         VALUES (@id, @account_id, @live_mode, @payment_intent_id, @intent_id, @status, @reason, @amount_in_cents, @currency,
           @balance_transaction_id, @reversal_balance_transaction_id, @created_at, @updated_at, @closed_at)`,
      ),
      byId: db.prepare('SELECT * FROM disputes WHERE id = ?'),
      byPaymentIntent: db.prepare('SELECT * FROM disputes WHERE payment_intent_id = ?'),
      // The status guard makes a lost race change nothing instead of moving twice.
      setStatus: db.prepare(
        `UPDATE disputes SET status = @status, updated_at = @at,
           closed_at = CASE WHEN @status IN ('won', 'lost') THEN @at ELSE closed_at END,
           reversal_balance_transaction_id = COALESCE(@reversal_balance_transaction_id, reversal_balance_transaction_id)
         WHERE id = @id AND status = @from`,
      ),
    };
  }

  insert(row: DisputeRow): void {
    this.s.insert.run(row);
  }
  byId(id: string): DisputeRow | undefined {
    return this.s.byId.get(id) as DisputeRow | undefined;
  }
  byPaymentIntent(id: string): DisputeRow | undefined {
    return this.s.byPaymentIntent.get(id) as DisputeRow | undefined;
  }
  setStatus(input: { id: string; from: string; status: string; at: string; reversal_balance_transaction_id: string | null }): boolean {
    return this.s.setStatus.run(input).changes === 1;
  }
}

export const disputesStore = perDb((db) => new DisputesStore(db));
