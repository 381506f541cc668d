import type { Migration } from '../migrate.js';

export const storeShipping: Migration = {
  version: 60,
  name: 'store-shipping',
  up: `
    -- One catalogue per account (destinations and their options, JSON validated by the module).
    -- A catalogue is read whole for every quote and edited whole: one row keeps it consistent.
    CREATE TABLE store_shipping_settings (
      account_id TEXT PRIMARY KEY,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
      catalogue TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
  `,
};
