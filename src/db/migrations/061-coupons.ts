import type { Migration } from '../migrate.js';

export const coupons: Migration = {
  version: 61,
  name: 'coupons',
  up: `
    CREATE TABLE coupons (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      name TEXT NOT NULL,
      -- name folded (upper case, trimmed): the code a buyer types matches it whatever the case
      code_key TEXT NOT NULL,
      discount_mode TEXT NOT NULL CHECK (discount_mode IN ('code', 'bank', 'custom_bins')),
      display_name TEXT,
      amount_off_in_cents INTEGER,
      percent_off REAL,
      currency TEXT,
      automatically_applies INTEGER NOT NULL CHECK (automatically_applies IN (0, 1)),
      max_redemptions INTEGER,
      times_redeemed INTEGER NOT NULL DEFAULT 0,
      duration TEXT NOT NULL CHECK (duration IN ('once', 'repeating', 'forever')),
      duration_in_payments INTEGER,
      minimum_amount_in_cents INTEGER,
      once_per_customer INTEGER NOT NULL CHECK (once_per_customer IN (0, 1)),
      product_ids TEXT NOT NULL DEFAULT '[]',
      starts_at TEXT,
      expires_at TEXT,
      archived INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      CHECK ((amount_off_in_cents IS NULL) <> (percent_off IS NULL))
    ) STRICT;
    CREATE INDEX coupons_account ON coupons(account_id, created_at);
    CREATE UNIQUE INDEX coupons_code ON coupons(account_id, code_key) WHERE archived = 0;

    -- One row per paid checkout that carried the coupon: limits and once-per-customer count these.
    CREATE TABLE coupon_redemptions (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      coupon_id TEXT NOT NULL REFERENCES coupons(id),
      checkout_id TEXT NOT NULL,
      customer_id TEXT,
      amount_off_in_cents INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      UNIQUE (coupon_id, checkout_id)
    ) STRICT;
    CREATE INDEX coupon_redemptions_customer ON coupon_redemptions(coupon_id, customer_id);
  `,
};
