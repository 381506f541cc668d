import type { Migration } from '../migrate.js';

/**
 * Objects a store made and pushed (sync): at the central they carry the store that owns their
 * lifecycle, so the central's own workers (hold expiry, subscription billing, contract reminders and
 * expiry) leave them to the store, which already runs them; the central learns each step as a record.
 */
export const storeOwned: Migration = {
  version: 80,
  name: 'store-owned',
  up: `
    ALTER TABLE sched_bookings ADD COLUMN origin_store_id TEXT;
    ALTER TABLE subscriptions ADD COLUMN origin_store_id TEXT;
    ALTER TABLE contracts ADD COLUMN origin_store_id TEXT;
  `,
};
