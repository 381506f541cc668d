import type { Migration } from '../migrate.js';

export const subscriptions: Migration = {
  version: 65,
  name: 'subscriptions',
  up: `
    CREATE TABLE subscriptions (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      customer_id TEXT,
      product_id TEXT NOT NULL,
      price_id TEXT NOT NULL,
      amount_in_cents INTEGER NOT NULL,
      currency TEXT NOT NULL,
      billing_interval TEXT NOT NULL CHECK (billing_interval IN ('day', 'week', 'month', 'year')),
      billing_interval_count INTEGER NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('active', 'past_due', 'paused', 'canceled')),
      current_period_start TEXT NOT NULL,
      current_period_end TEXT NOT NULL,
      -- Automatic charges failed in a row; the first failure fixes the retry schedule (+3 and +5 days).
      failed_attempts INTEGER NOT NULL DEFAULT 0,
      first_failure_at TEXT,
      next_retry_at TEXT,
      paused_at TEXT,
      canceled_at TEXT,
      cancel_reason TEXT,
      origin_checkout_id TEXT NOT NULL,
      latest_checkout_id TEXT,
      card_network TEXT,
      card_last4 TEXT,
      -- Sandbox only: the outcome the sandbox "card on file" gives automatic charges (set by the advance helper).
      sandbox_outcome TEXT NOT NULL DEFAULT 'succeeded' CHECK (sandbox_outcome IN ('succeeded', 'failed')),
      -- Optimistic lock: a transition applies once even if the biller and a request race.
      version INTEGER NOT NULL DEFAULT 0,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      UNIQUE (origin_checkout_id, price_id)
    ) STRICT;
    CREATE INDEX subscriptions_account ON subscriptions(account_id, created_at);
    CREATE INDEX subscriptions_due ON subscriptions(status, current_period_end);
    CREATE INDEX subscriptions_retry ON subscriptions(status, next_retry_at);
  `,
};
