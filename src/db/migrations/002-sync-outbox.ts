import type { Migration } from '../migrate.js';

export const syncOutbox: Migration = {
  version: 2,
  name: 'sync-outbox',
  up: `
    -- Facts central must learn, appended in the same transaction as the change (see src/sync/outbox.ts).
    CREATE TABLE sync_outbox (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      kind TEXT NOT NULL,
      payload TEXT NOT NULL,
      created_at TEXT NOT NULL
    ) STRICT;
  `,
};
