import type { Migration } from '../migrate.js';

export const webhooks: Migration = {
  version: 30,
  name: 'webhooks',
  up: `
    -- Endpoints belong to one account and one environment (a sandbox's endpoints are its own).
    -- secret: the signing secret encrypted at rest (see src/modules/webhooks/secrets.ts).
    -- from_seq: events.seq when the endpoint was made; it receives only later events.
    CREATE TABLE webhook_endpoints (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      url TEXT NOT NULL,
      description TEXT,
      secret TEXT NOT NULL,
      disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
      disabled_reason TEXT,
      from_seq INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX webhook_endpoints_account ON webhook_endpoints(account_id, live_mode);

    -- One row per event and endpoint. event_id is the webhook-id: the same on every attempt, and
    -- UNIQUE with the endpoint so an event re-emitted with the same id is delivered once.
    -- payload is set only for test sends, which are not events of the account.
    CREATE TABLE webhook_deliveries (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
      event_id TEXT NOT NULL,
      event_type TEXT NOT NULL,
      event_account_id TEXT NOT NULL,
      payload TEXT,
      status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled')),
      attempts INTEGER NOT NULL DEFAULT 0,
      -- Scheduled attempts only (manual resends do not use up the retry schedule).
      auto_attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_ms INTEGER,
      last_response_code INTEGER,
      last_error TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      UNIQUE (endpoint_id, event_id)
    ) STRICT;
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_ms) WHERE status = 'pending';
    CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at);

    CREATE TABLE webhook_attempts (
      delivery_id TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
      attempt INTEGER NOT NULL,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      manual INTEGER NOT NULL CHECK (manual IN (0, 1)),
      webhook_timestamp INTEGER NOT NULL,
      attempted_at TEXT NOT NULL,
      duration_ms INTEGER NOT NULL,
      response_code INTEGER,
      error TEXT,
      PRIMARY KEY (delivery_id, attempt)
    ) STRICT;

    -- How far the delivery worker has fanned events out (events.seq).
    CREATE TABLE webhook_cursor (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      seq INTEGER NOT NULL
    ) STRICT;
    INSERT INTO webhook_cursor (id, seq) VALUES (1, 0);
  `,
};
