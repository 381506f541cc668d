import type { Migration } from '../migrate.js';

/**
 * Recurring products added to a subscription beside the one it was started with, and one-time
 * charges waiting for the next renewal (spec 6.2 subscription.item_added/item_removed/invoice_item_added).
 */
export const subscriptionItems: Migration = {
  version: 68,
  name: 'subscription-items',
  up: `
    CREATE TABLE subscription_items (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      subscription_id TEXT NOT NULL REFERENCES subscriptions(id),
      product_id TEXT NOT NULL,
      price_id TEXT NOT NULL,
      name TEXT NOT NULL,
      amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
      quantity INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 9),
      tax_category TEXT NOT NULL,
      created_at TEXT NOT NULL,
      -- Kept after removal so the history stays readable; only rows without it are billed.
      removed_at TEXT
    ) STRICT;
    CREATE INDEX subscription_items_sub ON subscription_items(subscription_id, created_at);

    CREATE TABLE subscription_invoice_items (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      subscription_id TEXT NOT NULL REFERENCES subscriptions(id),
      description TEXT NOT NULL,
      amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
      created_at TEXT NOT NULL,
      -- The renewal checkout that charged it; null while it waits for the next successful charge.
      billed_checkout_id TEXT
    ) STRICT;
    CREATE INDEX subscription_invoice_items_sub ON subscription_invoice_items(subscription_id, created_at);
  `,
};
