import type { Migration } from '../migrate.js';

export const rowOrigins: Migration = {
  version: 95,
  name: 'row-origins',
  up: `
    -- Where a ledger row or an intent was first written, for reconciliation between a store and its
    -- central: NULL on the box that made it; at the central, the store_id whose pushed record wrote
    -- it; at a store, 'central' for a row that arrived through the central's feed. Set at insert
    -- (rowOrigin in src/sync/origins.ts), never changed after.
    ALTER TABLE balance_transactions ADD COLUMN origin TEXT;
    ALTER TABLE intents ADD COLUMN origin TEXT;
    CREATE INDEX balance_transactions_origin ON balance_transactions(origin, created_at);
    CREATE INDEX intents_origin ON intents(origin, created_at);
  `,
};
