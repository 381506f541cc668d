import type { Migration } from '../migrate.js';

/**
 * Fewer indexes written per delivery (docs/webhooks.md). A fan-out row was written into five
 * b-trees: the table, the random `whd_` id's UNIQUE index (a random page per row), UNIQUE
 * (endpoint_id, event_seq), the due index and (endpoint_id, created_at). Now:
 * - the public id of a new delivery is derived from its seq (`delivery-ids.ts`, keyed by the random
 *   key made here) and not stored; ids stored before (and test sends') stay, in a partial index;
 * - one delivery per (endpoint, event) is kept by the fan-out's own insert, which makes no row for
 *   an event at or before the cursor (the cursor moves in the same transaction as the rows), instead
 *   of a UNIQUE index;
 * - the deliveries page reads (endpoint_id) (rowid = seq, creation order) instead of (endpoint_id,
 *   created_at).
 * Both tables are rebuilt (SQLite cannot drop a column's UNIQUE or NOT NULL in place), as in 90.
 */
export const webhookDerivedIds: Migration = {
  version: 96,
  name: 'webhook-derived-ids',
  up: `
    CREATE TABLE webhook_delivery_ids_key (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      key BLOB NOT NULL
    ) STRICT;
    INSERT INTO webhook_delivery_ids_key (id, key) VALUES (1, randomblob(32));

    CREATE TABLE webhook_deliveries_v3 (
      seq INTEGER PRIMARY KEY,
      -- NULL: the id is derived from seq (delivery-ids.ts).
      id TEXT,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
      event_id TEXT NOT NULL,
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
      updated_at TEXT NOT NULL
    ) STRICT;
    INSERT INTO webhook_deliveries_v3 (seq, id, account_id, live_mode, endpoint_id, event_id, event_seq, event_type, event_account_id,
        payload, status, attempts, auto_attempts, next_attempt_ms, last_response_code, last_error, created_at, updated_at)
      SELECT seq, id, account_id, live_mode, endpoint_id, event_id, event_seq, event_type, event_account_id,
        payload, status, attempts, auto_attempts, next_attempt_ms, last_response_code, last_error, created_at, updated_at
      FROM webhook_deliveries ORDER BY seq;

    CREATE TABLE webhook_attempts_v3 (
      delivery_seq INTEGER NOT NULL REFERENCES webhook_deliveries_v3(seq) ON DELETE CASCADE,
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
    INSERT INTO webhook_attempts_v3 SELECT delivery_seq, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at,
        duration_ms, response_code, error
      FROM webhook_attempts ORDER BY delivery_seq, attempt;

    DROP TABLE webhook_attempts;
    DROP TABLE webhook_deliveries;
    ALTER TABLE webhook_deliveries_v3 RENAME TO webhook_deliveries;
    ALTER TABLE webhook_attempts_v3 RENAME TO webhook_attempts;
    -- Stored ids only (older rows, test sends): a new fan-out row is not in this index at all.
    CREATE UNIQUE INDEX webhook_deliveries_stored_id ON webhook_deliveries(id) WHERE id IS NOT NULL;
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_ms, endpoint_id) WHERE status = 'pending';
    -- An endpoint's deliveries in seq (creation) order: the rowid ends every index entry.
    CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id);
  `,
};
