import type { Migration } from '../migrate.js';

export const syncFeedOrigin: Migration = {
  version: 85,
  name: 'sync-feed-origin',
  up: `
    -- Central side: the store box whose push made this change (NULL: made at the central). The feed
    -- never sends a change back to the box it came from; other boxes of the account still get it.
    ALTER TABLE sync_feed ADD COLUMN origin_store_id TEXT;
    -- The only box that gets this change (NULL: every box of the account). A refusal of a record is
    -- news for the box that pushed it, not for the other boxes of the account.
    ALTER TABLE sync_feed ADD COLUMN to_store_id TEXT;
  `,
};
