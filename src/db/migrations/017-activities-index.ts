import type { Migration } from '../migrate.js';

export const activitiesIndex: Migration = {
  version: 17,
  name: 'activities-index',
  up: `
    -- GET /activities reads the outbox newest first by time, per account and environment.
    CREATE INDEX events_account_time ON events(account_id, live_mode, created_at);
  `,
};
