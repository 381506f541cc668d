import type { Migration } from '../migrate.js';

/**
 * Webhook delivery bookkeeping keyed by sequence numbers instead of random ids. Every delivery is
 * written once at fan-out and updated once per attempt, and every attempt is a row: with the old
 * keys each of those writes landed on a random page of two indexes (`UNIQUE (endpoint_id,
 * event_id)` and the attempts' `(delivery_id, attempt)`), so a group commit rewrote most of those
 * indexes into the WAL (about 30 µs of CPU per delivery at 80,000 deliveries, docs/webhooks.md).
 * Now a delivery has `seq` (its rowid, in creation order), is unique per (endpoint, `events.seq`)
 * (the events table's AUTOINCREMENT never reuses one, and a re-emitted event id is not a new
 * event row), and attempts are keyed by (delivery_seq, attempt): appends. The public `whd_` id
 * stays (random, unique, indexed) for the API.
 */
export const webhookSequentialKeys: Migration = {
  version: 90,
  name: 'webhook-sequential-keys',
  up: `
    CREATE TABLE webhook_deliveries_v2 (
      seq INTEGER PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
      -- The webhook-id (msg_…): the same on every attempt.
      event_id TEXT NOT NULL,
      -- events.seq of the event delivered; NULL for test sends, which are not events.
      event_seq INTEGER,
      event_type TEXT NOT NULL,
      event_account_id TEXT NOT NULL,
      payload TEXT,
      status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled')),
      attempts INTEGER NOT NULL DEFAULT 0,
      auto_attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_ms INTEGER,
      last_response_code INTEGER,
      last_error TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      UNIQUE (endpoint_id, event_seq)
    ) STRICT;
    INSERT INTO webhook_deliveries_v2 (seq, id, account_id, live_mode, endpoint_id, event_id, event_seq, event_type, event_account_id,
        payload, status, attempts, auto_attempts, next_attempt_ms, last_response_code, last_error, created_at, updated_at)
      SELECT d.rowid, d.id, d.account_id, d.live_mode, d.endpoint_id, d.event_id, CASE WHEN d.payload IS NULL THEN e.seq END, d.event_type,
        d.event_account_id, d.payload, d.status, d.attempts, d.auto_attempts, d.next_attempt_ms, d.last_response_code, d.last_error,
        d.created_at, d.updated_at
      FROM webhook_deliveries d LEFT JOIN events e ON e.id = d.event_id
      ORDER BY d.rowid;

    CREATE TABLE webhook_attempts_v2 (
      delivery_seq INTEGER NOT NULL REFERENCES webhook_deliveries_v2(seq) ON DELETE CASCADE,
      attempt INTEGER NOT NULL,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      manual INTEGER NOT NULL CHECK (manual IN (0, 1)),
      webhook_timestamp INTEGER NOT NULL,
      attempted_at TEXT NOT NULL,
      duration_ms INTEGER NOT NULL,
      response_code INTEGER,
      error TEXT,
      PRIMARY KEY (delivery_seq, attempt)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO webhook_attempts_v2 (delivery_seq, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at, duration_ms,
        response_code, error)
      SELECT d.seq, a.attempt, a.account_id, a.live_mode, a.manual, a.webhook_timestamp, a.attempted_at, a.duration_ms, a.response_code, a.error
      FROM webhook_attempts a JOIN webhook_deliveries_v2 d ON d.id = a.delivery_id;

    DROP TABLE webhook_attempts;
    DROP TABLE webhook_deliveries;
    ALTER TABLE webhook_deliveries_v2 RENAME TO webhook_deliveries;
    ALTER TABLE webhook_attempts_v2 RENAME TO webhook_attempts;
    -- Due deliveries in order, the seq (rowid) read from the index alone.
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_ms, endpoint_id) WHERE status = 'pending';
    CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at);
  `,
};
