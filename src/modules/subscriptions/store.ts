import type { Db } from '../../db/database.js';
import { accountsArg, accountsStatement, listCount } from '../../db/list-counts.js';
import type { SubscriptionStatus } from './machine.js';
import { preparedOnUse } from '../../db/statements.js';

export interface SubscriptionRow {
  id: string;
  account_id: string;
  live_mode: number;
  customer_id: string | null;
  product_id: string;
  price_id: string;
  amount_in_cents: number;
  currency: string;
  billing_interval: 'day' | 'week' | 'month' | 'year';
  billing_interval_count: number;
  status: SubscriptionStatus;
  current_period_start: string;
  current_period_end: string;
  failed_attempts: number;
  first_failure_at: string | null;
  next_retry_at: string | null;
  paused_at: string | null;
  canceled_at: string | null;
  cancel_reason: string | null;
  origin_checkout_id: string;
  latest_checkout_id: string | null;
  card_network: string | null;
  card_last4: string | null;
  sandbox_outcome: 'succeeded' | 'failed';
  /** Set while in a free trial (no charge yet); cleared by the first successful charge. */
  trial_end: string | null;
  /** The card tokenized without a charge when a trial started (`setup_intent.*` events carry it). */
  setup_intent_id: string | null;
  /** Periods paid (the first checkout's included; a free trial is not one). */
  periods_paid: number;
  /** From the price: the subscription ends by itself once this many periods are paid and the last has run. */
  cancel_after_periods: number | null;
  /** From the price: a requested cancel is refused until this many periods are paid. */
  minimum_periods: number | null;
  /** The saved card's hosted id (`pay_m_`), null without a card. */
  payment_method_id: string | null;
  version: number;
  created_at: string;
  updated_at: string;
}

export interface SubscriptionItemRow {
  id: string;
  account_id: string;
  live_mode: number;
  subscription_id: string;
  product_id: string;
  price_id: string;
  name: string;
  amount_in_cents: number;
  quantity: number;
  tax_category: 'good' | 'service';
  created_at: string;
  removed_at: string | null;
}

export interface InvoiceItemRow {
  id: string;
  account_id: string;
  live_mode: number;
  subscription_id: string;
  description: string;
  amount_in_cents: number;
  created_at: string;
  billed_checkout_id: string | null;
}

const COLUMNS = [
  'id',
  'account_id',
  'live_mode',
  'customer_id',
  'product_id',
  'price_id',
  'amount_in_cents',
  'currency',
  'billing_interval',
  'billing_interval_count',
  'status',
  'current_period_start',
  'current_period_end',
  'failed_attempts',
  'first_failure_at',
  'next_retry_at',
  'paused_at',
  'canceled_at',
  'cancel_reason',
  'origin_checkout_id',
  'latest_checkout_id',
  'card_network',
  'card_last4',
  'sandbox_outcome',
  'trial_end',
  'setup_intent_id',
  'periods_paid',
  'cancel_after_periods',
  'minimum_periods',
  'payment_method_id',
  'version',
  'created_at',
  'updated_at',
];

/** A row carried by an older posd's sync record lacks the period and payment-method columns. */
function withDefaults(row: SubscriptionRow): SubscriptionRow {
  return {
    ...row,
    periods_paid: row.periods_paid ?? 0,
    cancel_after_periods: row.cancel_after_periods ?? null,
    minimum_periods: row.minimum_periods ?? null,
    payment_method_id: row.payment_method_id ?? null,
  };
}

/** All SQL of subscriptions. */
export class SubscriptionsStore {
  private readonly s;

  constructor(private readonly db: Db) {
    const list = (status: string) => (a: (column: string, param: string) => string) =>
      `SELECT * FROM subscriptions WHERE ${a('account_id', '@ids')} AND live_mode = @live${status} ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`;
    this.s = preparedOnUse({
      insert: () => db.prepare(`INSERT INTO subscriptions (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => `@${c}`).join(', ')}) ON CONFLICT DO NOTHING`),
      save: () =>
        db.prepare(
          `UPDATE subscriptions SET ${COLUMNS.filter((c) => c !== 'id' && c !== 'version')
            .map((c) => `${c} = @${c}`)
            .join(', ')},
           version = version + 1
         WHERE id = @id AND version = @version`,
        ),
      get: () => db.prepare('SELECT * FROM subscriptions WHERE id = ?'),
      insertItem: () =>
        db.prepare(
          `INSERT INTO subscription_items (id, account_id, live_mode, subscription_id, product_id, price_id, name, amount_in_cents, quantity, tax_category, created_at, removed_at)
         VALUES (@id, @account_id, @live_mode, @subscription_id, @product_id, @price_id, @name, @amount_in_cents, @quantity, @tax_category, @created_at, @removed_at)`,
        ),
      removeItem: () => db.prepare('UPDATE subscription_items SET removed_at = ? WHERE id = ? AND subscription_id = ? AND removed_at IS NULL'),
      items: () => db.prepare('SELECT * FROM subscription_items WHERE subscription_id = ? AND removed_at IS NULL ORDER BY created_at, rowid'),
      insertInvoiceItem: () =>
        db.prepare(
          `INSERT INTO subscription_invoice_items (id, account_id, live_mode, subscription_id, description, amount_in_cents, created_at, billed_checkout_id)
         VALUES (@id, @account_id, @live_mode, @subscription_id, @description, @amount_in_cents, @created_at, @billed_checkout_id)`,
        ),
      pendingInvoiceItems: () =>
        db.prepare('SELECT * FROM subscription_invoice_items WHERE subscription_id = ? AND billed_checkout_id IS NULL ORDER BY created_at, rowid'),
      markBilled: () => db.prepare('UPDATE subscription_invoice_items SET billed_checkout_id = ? WHERE subscription_id = ? AND billed_checkout_id IS NULL'),
      byPaymentMethod: () =>
        db.prepare('SELECT * FROM subscriptions WHERE payment_method_id = ? AND account_id = ? AND live_mode = ? ORDER BY rowid DESC LIMIT 1'),
      byOrigin: () => db.prepare('SELECT * FROM subscriptions WHERE origin_checkout_id = ? ORDER BY rowid'),
      list: () => accountsStatement(db, list('')),
      listOfStatus: () => accountsStatement(db, list(' AND status = @status')),
      due: () =>
        db.prepare(
          `SELECT * FROM subscriptions
         WHERE ((status = 'active' AND current_period_end <= @now) OR (status = 'past_due' AND next_retry_at <= @now))
           AND origin_store_id IS NULL
         ORDER BY rowid`,
        ),
      // A central never bills a store's subscription: the store does, and its charges reach the central as records.
      setOrigin: () => db.prepare('UPDATE subscriptions SET origin_store_id = ? WHERE id = ?'),
      item: () => db.prepare('SELECT id FROM subscription_items WHERE id = ?'),
      invoiceItem: () => db.prepare('SELECT id FROM subscription_invoice_items WHERE id = ?'),
    });
  }

  insert(row: SubscriptionRow): boolean {
    return this.s.insert.run(withDefaults(row)).changes === 1;
  }
  /** False when the row changed since it was read (the caller's transition is stale). */
  save(row: SubscriptionRow): boolean {
    return this.s.save.run(withDefaults(row)).changes === 1;
  }
  /** The subscription whose saved card has this hosted payment method id, in that account. */
  byPaymentMethod(accountId: string, liveMode: boolean, paymentMethodId: string): SubscriptionRow | undefined {
    return this.s.byPaymentMethod.get(paymentMethodId, accountId, liveMode ? 1 : 0) as SubscriptionRow | undefined;
  }
  insertItem(row: SubscriptionItemRow): void {
    this.s.insertItem.run(row);
  }
  /** False when the item is not an active item of that subscription. */
  removeItem(subscriptionId: string, itemId: string, at: string): boolean {
    return this.s.removeItem.run(at, itemId, subscriptionId).changes === 1;
  }
  /** The added recurring items still billed with each renewal. */
  items(subscriptionId: string): SubscriptionItemRow[] {
    return this.s.items.all(subscriptionId) as SubscriptionItemRow[];
  }
  insertInvoiceItem(row: InvoiceItemRow): void {
    this.s.insertInvoiceItem.run(row);
  }
  pendingInvoiceItems(subscriptionId: string): InvoiceItemRow[] {
    return this.s.pendingInvoiceItems.all(subscriptionId) as InvoiceItemRow[];
  }
  /** The pending one-time charges were paid by this renewal checkout. */
  markInvoiceItemsBilled(subscriptionId: string, checkoutId: string): void {
    this.s.markBilled.run(checkoutId, subscriptionId);
  }
  get(id: string): SubscriptionRow | undefined {
    return this.s.get.get(id) as SubscriptionRow | undefined;
  }
  byOrigin(checkoutId: string): SubscriptionRow[] {
    return this.s.byOrigin.all(checkoutId) as SubscriptionRow[];
  }
  list(ids: string[], live: boolean, status: string | null, limit: number, offset: number): { rows: SubscriptionRow[]; total: number } {
    const p = { ids: accountsArg(ids), live: live ? 1 : 0, limit, offset };
    const rows = (status === null ? this.s.list(ids).all(p) : this.s.listOfStatus(ids).all({ ...p, status })) as SubscriptionRow[];
    return { rows, total: listCount(this.db, 'subscriptions', ids, live, status ?? '') };
  }
  /** At a central: the store that made this subscription and bills it. */
  setOrigin(id: string, storeId: string): void {
    this.s.setOrigin.run(storeId, id);
  }
  hasItem(id: string): boolean {
    return this.s.item.get(id) !== undefined;
  }
  hasInvoiceItem(id: string): boolean {
    return this.s.invoiceItem.get(id) !== undefined;
  }
  due(now: string): SubscriptionRow[] {
    return this.s.due.all({ now }) as SubscriptionRow[];
  }
}
