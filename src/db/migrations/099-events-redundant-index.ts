import type { Migration } from '../migrate.js';

export const eventsRedundantIndex: Migration = {
  version: 99,
  name: 'events-redundant-index',
  up: `
    -- events_account(account_id, live_mode, seq) has the same prefix as events_account_time
    -- (migration 17), which serves every query that used it (the activity feed's account filter
    -- and count); the webhook and sync workers read events by seq, the rowid. Every event written
    -- paid for a third B-tree insert (two or three more WAL pages per peer transfer) for nothing.
    DROP INDEX IF EXISTS events_account;
  `,
};
