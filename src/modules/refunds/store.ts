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

export type TerminalRefundStatus = 'queued' | 'sent' | 'succeeded' | 'failed';

export interface TerminalRefundRow {
  refund_id: string;
  terminal_id: string;
  kind: 'reversal' | 'refund_payment';
  poi_transaction_id: string | null;
  poi_transaction_at: string | null;
  status: TerminalRefundStatus;
  attempt: number;
  failure_reason: string | null;
  terminal_reference: string | null;
  updated_at: string;
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
      settle: db.prepare(
        `UPDATE refunds SET status = @status, fee_returned_in_cents = @fee_returned_in_cents, balance_transaction_id = @balance_transaction_id
         WHERE id = @id`,
      ),
      insertTerminal: db.prepare(
        `INSERT INTO terminal_refunds (refund_id, terminal_id, kind, poi_transaction_id, poi_transaction_at, status, attempt, failure_reason,
           terminal_reference, updated_at)
         VALUES (@refund_id, @terminal_id, @kind, @poi_transaction_id, @poi_transaction_at, @status, @attempt, @failure_reason,
           @terminal_reference, @updated_at)`,
      ),
      updateTerminal: db.prepare(
        `UPDATE terminal_refunds SET status = @status, attempt = @attempt, failure_reason = @failure_reason,
           terminal_reference = @terminal_reference, updated_at = @updated_at
         WHERE refund_id = @refund_id`,
      ),
      terminalOf: db.prepare('SELECT * FROM terminal_refunds WHERE refund_id = ?'),
      openOfTerminal: db.prepare(`SELECT * FROM terminal_refunds WHERE terminal_id = ? AND status IN ('queued', 'sent') ORDER BY updated_at, refund_id`),
      sentOfTerminal: db.prepare(`SELECT 1 FROM terminal_refunds WHERE terminal_id = ? AND status = 'sent' LIMIT 1`),
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
  settle(row: Pick<RefundRow, 'id' | 'status' | 'fee_returned_in_cents' | 'balance_transaction_id'>): void {
    this.stmts.settle.run(row);
  }
  insertTerminal(row: TerminalRefundRow): void {
    this.stmts.insertTerminal.run(row);
  }
  updateTerminal(row: TerminalRefundRow): void {
    this.stmts.updateTerminal.run(row);
  }
  terminalOf(refundId: string): TerminalRefundRow | undefined {
    return this.stmts.terminalOf.get(refundId) as TerminalRefundRow | undefined;
  }
  /** The terminal's refunds not yet answered, oldest first. */
  openOfTerminal(terminalId: string): TerminalRefundRow[] {
    return this.stmts.openOfTerminal.all(terminalId) as TerminalRefundRow[];
  }
  /** Whether the terminal may hold one of its refund requests: sent, its answer not yet in. */
  hasSentOfTerminal(terminalId: string): boolean {
    return this.stmts.sentOfTerminal.get(terminalId) !== undefined;
  }
}

export const refundsStore = perDb((db) => new RefundsStore(db));
