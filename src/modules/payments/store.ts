import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';
import type { PaymentStatus } from './machine.js';

export interface PaymentIntentRow {
  id: string;
  account_id: string;
  live_mode: number;
  intent_id: string;
  checkout_id: string;
  method: 'card' | 'bank_transfer' | 'terminal' | 'cash' | 'balance' | 'crypto';
  status: PaymentStatus;
  amount_in_cents: number;
  currency: string;
  fee_in_cents: number;
  commission_in_cents: number;
  vat_withheld_in_cents: number;
  customer_id: string | null;
  failure_reason: string | null;
  card_network: string | null;
  card_last4: string | null;
  authorization_code: string | null;
  processor_reference: string | null;
  installments: number | null;
  channel: string | null;
  balance_transaction_id: string | null;
  tax_invoice_url: string | null;
  /** A card a terminal approved offline: when it stored it, and when it forwarded it (docs/stored-payments.md). */
  offline_stored_at?: string | null;
  offline_forwarded_at?: string | null;
  created_at: string;
  updated_at: string;
  /** The method's hosted id (`pay_m_`). */
  payment_method_id: string;
}

/** A card saved by a paid checkout (`payment_methods`): what `POST /one_time_payments` charges. */
export interface SavedCardRow {
  id: string;
  account_id: string;
  live_mode: number;
  customer_id: string | null;
  type: 'card';
  card_network: string;
  card_last4: string;
  payment_intent_id: string;
  created_at: string;
}

/** All SQL of payment intents. */
export class PaymentsStore {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO payment_intents (id, account_id, live_mode, intent_id, checkout_id, method, status, amount_in_cents, currency,
           fee_in_cents, commission_in_cents, vat_withheld_in_cents, customer_id, failure_reason, card_network, card_last4,
           authorization_code, processor_reference, installments, channel, balance_transaction_id, tax_invoice_url, offline_stored_at,
           offline_forwarded_at, created_at, updated_at, payment_method_id)
         VALUES (@id, @account_id, @live_mode, @intent_id, @checkout_id, @method, @status, @amount_in_cents, @currency,
           @fee_in_cents, @commission_in_cents, @vat_withheld_in_cents, @customer_id, @failure_reason, @card_network, @card_last4,
           @authorization_code, @processor_reference, @installments, @channel, @balance_transaction_id, @tax_invoice_url, @offline_stored_at,
           @offline_forwarded_at, @created_at, @updated_at, @payment_method_id)`,
      ),
      saveCard: db.prepare(
        `INSERT OR IGNORE INTO payment_methods (id, account_id, live_mode, customer_id, type, card_network, card_last4, payment_intent_id, created_at)
         VALUES (@id, @account_id, @live_mode, @customer_id, @type, @card_network, @card_last4, @payment_intent_id, @created_at)`,
      ),
      savedCard: db.prepare('SELECT * FROM payment_methods WHERE id = ? AND account_id = ? AND live_mode = ?'),
      byId: db.prepare('SELECT * FROM payment_intents WHERE id = ?'),
      byCheckout: db.prepare('SELECT * FROM payment_intents WHERE checkout_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1'),
      markForwarded: db.prepare('UPDATE payment_intents SET offline_forwarded_at = COALESCE(offline_forwarded_at, ?), updated_at = ? WHERE id = ?'),
      setInvoiceUrl: db.prepare('UPDATE payment_intents SET tax_invoice_url = ?, updated_at = ? WHERE id = ?'),
      settle: db.prepare(
        `UPDATE payment_intents SET status = @status, fee_in_cents = @fee_in_cents, commission_in_cents = @commission_in_cents,
           vat_withheld_in_cents = @vat_withheld_in_cents, failure_reason = @failure_reason, processor_reference = @processor_reference,
           card_network = @card_network, card_last4 = @card_last4, authorization_code = @authorization_code,
           balance_transaction_id = @balance_transaction_id, updated_at = @updated_at
         WHERE id = @id AND status = 'pending'`,
      ),
    };
  }

  insert(row: PaymentIntentRow): void {
    // A row a store pushed before the offline mark existed has no such fields.
    this.stmts.insert.run({ offline_stored_at: null, offline_forwarded_at: null, ...row });
  }
  /** A stored card handed to its processor: the time stays on the payment intent, whatever its outcome. */
  markForwarded(id: string, at: string): void {
    this.stmts.markForwarded.run(at, at, id);
  }
  saveCard(row: SavedCardRow): void {
    this.stmts.saveCard.run(row);
  }
  savedCard(id: string, accountId: string, liveMode: boolean): SavedCardRow | undefined {
    return this.stmts.savedCard.get(id, accountId, liveMode ? 1 : 0) as SavedCardRow | undefined;
  }
  byId(id: string): PaymentIntentRow | undefined {
    return this.stmts.byId.get(id) as PaymentIntentRow | undefined;
  }
  latestForCheckout(checkoutId: string): PaymentIntentRow | undefined {
    return this.stmts.byCheckout.get(checkoutId) as PaymentIntentRow | undefined;
  }
  /** A pending payment's outcome; false when it was no longer pending (another writer settled it). */
  settle(row: PaymentIntentRow): boolean {
    const { status, fee_in_cents, commission_in_cents, vat_withheld_in_cents, failure_reason, processor_reference, balance_transaction_id, updated_at, id } =
      row;
    const { card_network, card_last4, authorization_code } = row;
    const params = {
      id,
      status,
      fee_in_cents,
      commission_in_cents,
      vat_withheld_in_cents,
      failure_reason,
      processor_reference,
      balance_transaction_id,
      updated_at,
    };
    return this.stmts.settle.run({ ...params, card_network, card_last4, authorization_code }).changes === 1;
  }
  setTaxInvoiceUrl(id: string, url: string | null, at: string): void {
    this.stmts.setInvoiceUrl.run(url, at, id);
  }
}

export const paymentsStore = perDb((db) => new PaymentsStore(db));
