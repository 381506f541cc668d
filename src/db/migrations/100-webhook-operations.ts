import type { Migration } from '../migrate.js';

/**
 * Operating webhooks (issue 21, docs/webhooks.md): per-endpoint event-type filters, signing-secret
 * rotation with an overlap, the failing-endpoint lifecycle, per-endpoint throttles, and bulk replays. Columns only added
 * (nullable or defaulted): no table is rebuilt and no index a fan-out row enters is added.
 */
export const webhookOperations: Migration = {
  version: 100,
  name: 'webhook-operations',
  up: `
    -- JSON array of event types the endpoint receives; NULL: every type.
    ALTER TABLE webhook_endpoints ADD COLUMN filter_types TEXT;
    -- The secret replaced by a rotation (sealed like secret) and when it stops signing (Unix ms).
    ALTER TABLE webhook_endpoints ADD COLUMN previous_secret TEXT;
    ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_ms INTEGER;
    -- When the endpoint's failing streak began (its first failed attempt since its last success).
    ALTER TABLE webhook_endpoints ADD COLUMN failing_since_ms INTEGER;
    -- Whether the streak's hour-long notice was given.
    ALTER TABLE webhook_endpoints ADD COLUMN failing_noticed INTEGER NOT NULL DEFAULT 0;
    -- When it was disabled and the newest event then: re-enabling can replay what it missed.
    ALTER TABLE webhook_endpoints ADD COLUMN disabled_at_ms INTEGER;
    ALTER TABLE webhook_endpoints ADD COLUMN disabled_seq INTEGER;

    -- Per-endpoint gates (gates.ts): messages per second, attempts in flight; NULL: none.
    ALTER TABLE webhook_endpoints ADD COLUMN rate_limit INTEGER;
    ALTER TABLE webhook_endpoints ADD COLUMN max_in_flight INTEGER;

    -- A bulk replay: its deliveries are the endpoint's rows with seq in [first_seq, last_seq].
    CREATE TABLE webhook_replays (
      id TEXT PRIMARY KEY,
      endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
      first_seq INTEGER,
      last_seq INTEGER,
      total INTEGER NOT NULL,
      filters TEXT NOT NULL,
      created_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX webhook_replays_endpoint ON webhook_replays(endpoint_id);
  `,
};
