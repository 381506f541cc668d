import type { Migration } from '../migrate.js';

export const checkoutCoupons: Migration = {
  version: 62,
  name: 'checkout-coupons',
  up: `
    -- The coupons a checkout carries (owned by the coupons module, keyed by the checkout id): the
    -- codes typed are kept so a changed checkout is priced again with them, and payment redeems them.
    CREATE TABLE checkout_coupons (
      checkout_id TEXT NOT NULL,
      coupon_id TEXT NOT NULL REFERENCES coupons(id),
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      code TEXT,
      automatic INTEGER NOT NULL CHECK (automatic IN (0, 1)),
      amount_off_in_cents INTEGER NOT NULL,
      position INTEGER NOT NULL,
      PRIMARY KEY (checkout_id, coupon_id)
    ) STRICT;
  `,
};
