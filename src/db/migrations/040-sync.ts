import type { Migration } from '../migrate.js';

export const sync: Migration = {
  version: 40,
  name: 'sync',
  up: `
    -- Store side: the push cursor (highest seq central acknowledged), the feed cursor, the store id
    -- and the last outcome of each loop. One row per key, written in the transaction that moves it.
    CREATE TABLE sync_state (
      key TEXT PRIMARY KEY,
      value TEXT NOT NULL
    ) STRICT;

    -- Central side: one row per store box (its own store_id, bound to the account whose key pushes).
    CREATE TABLE sync_stores (
      store_id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      applied_seq INTEGER NOT NULL DEFAULT 0,
      last_push_at TEXT,
      created_at TEXT NOT NULL
    ) STRICT;

    -- Central side: every record a store pushed, by its global id, with the hash of its content so a
    -- repeated push is recognised and a tampered one refused. 'held': no applier for its kind yet
    -- (an older central); kept and applied in order once one is registered, never dropped.
    CREATE TABLE sync_received (
      id TEXT PRIMARY KEY,
      store_id TEXT NOT NULL,
      seq INTEGER NOT NULL,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      kind TEXT NOT NULL,
      hash TEXT NOT NULL,
      payload TEXT NOT NULL,
      created_at TEXT NOT NULL,
      received_at TEXT NOT NULL,
      outcome TEXT NOT NULL CHECK (outcome IN ('applied', 'rejected', 'held')),
      reason TEXT,
      UNIQUE (store_id, seq)
    ) STRICT;
    CREATE INDEX sync_received_day ON sync_received(store_id, kind, created_at);
    CREATE INDEX sync_received_held ON sync_received(outcome) WHERE outcome = 'held';

    -- Central side: the change feed stores pull, per account (organization-wide rows have no account).
    CREATE TABLE sync_feed (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      organization_id TEXT NOT NULL,
      account_id TEXT,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      kind TEXT NOT NULL,
      object_id TEXT,
      payload TEXT NOT NULL,
      created_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX sync_feed_account ON sync_feed(account_id, seq);
    CREATE INDEX sync_feed_org ON sync_feed(organization_id, seq);

    -- Key changes reach the feed by trigger so every path that makes or revokes a key (API, CLI in
    -- another process) is caught in its own transaction. Only a central publishes a feed.
    CREATE TRIGGER sync_feed_key_insert AFTER INSERT ON api_keys
    WHEN (SELECT value FROM meta WHERE key = 'role') = 'central'
    BEGIN
      INSERT INTO sync_feed (organization_id, account_id, live_mode, kind, object_id, payload, created_at)
      VALUES (NEW.organization_id, NEW.account_id, NEW.live_mode, 'api_key', NEW.id,
        json_object('id', NEW.id, 'prefix', NEW.prefix, 'hash', NEW.hash, 'kind', NEW.kind,
          'environment', NEW.environment, 'account_id', NEW.account_id, 'organization_id', NEW.organization_id,
          'live_mode', NEW.live_mode, 'created_at', NEW.created_at, 'revoked_at', NEW.revoked_at),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
    END;
    CREATE TRIGGER sync_feed_key_revoke AFTER UPDATE OF revoked_at ON api_keys
    WHEN (SELECT value FROM meta WHERE key = 'role') = 'central' AND NEW.revoked_at IS NOT OLD.revoked_at
    BEGIN
      INSERT INTO sync_feed (organization_id, account_id, live_mode, kind, object_id, payload, created_at)
      VALUES (NEW.organization_id, NEW.account_id, NEW.live_mode, 'api_key', NEW.id,
        json_object('id', NEW.id, 'prefix', NEW.prefix, 'hash', NEW.hash, 'kind', NEW.kind,
          'environment', NEW.environment, 'account_id', NEW.account_id, 'organization_id', NEW.organization_id,
          'live_mode', NEW.live_mode, 'created_at', NEW.created_at, 'revoked_at', NEW.revoked_at),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
    END;

    -- Store side: central's refusals of records this store pushed (central decides).
    CREATE TABLE sync_decisions (
      record_id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      kind TEXT NOT NULL,
      reason TEXT NOT NULL,
      decided_at TEXT NOT NULL
    ) STRICT;

    -- Store side: the last comparison per account, day, currency and measure.
    CREATE TABLE sync_reconciliations (
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      day TEXT NOT NULL,
      currency TEXT NOT NULL,
      measure TEXT NOT NULL,
      store_count INTEGER NOT NULL,
      store_sum INTEGER NOT NULL,
      central_count INTEGER NOT NULL,
      central_sum INTEGER NOT NULL,
      checked_at TEXT NOT NULL,
      PRIMARY KEY (account_id, live_mode, day, currency, measure)
    ) STRICT;
  `,
};
