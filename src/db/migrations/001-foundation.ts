import type { Migration } from '../migrate.js';

export const foundation: Migration = {
  version: 1,
  name: 'foundation',
  up: `
    CREATE TABLE meta (
      key TEXT PRIMARY KEY,
      value TEXT NOT NULL
    ) STRICT;

    CREATE TABLE organizations (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      created_at TEXT NOT NULL
    ) STRICT;

    -- A live account (ac_) may own sandboxes (sbx_, live_mode 0, sandbox_of = the live account).
    -- Connected children point at their platform with parent_account_id.
    CREATE TABLE accounts (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      organization_id TEXT NOT NULL REFERENCES organizations(id),
      name TEXT NOT NULL,
      sandbox_of TEXT REFERENCES accounts(id),
      parent_account_id TEXT REFERENCES accounts(id),
      tax_id TEXT,
      tax_name TEXT,
      country TEXT NOT NULL,
      default_currency TEXT NOT NULL,
      currencies TEXT NOT NULL,
      event_format TEXT NOT NULL CHECK (event_format IN ('unified', 'both')),
      settings TEXT NOT NULL DEFAULT '{}',
      created_at TEXT NOT NULL,
      CHECK (account_id = id)
    ) STRICT;
    CREATE INDEX accounts_parent ON accounts(parent_account_id);
    CREATE INDEX accounts_org ON accounts(organization_id, live_mode);

    -- Keys are stored only as SHA-256 hashes: a key is 190 random bits, so a slow hash adds nothing.
    CREATE TABLE api_keys (
      id TEXT PRIMARY KEY,
      prefix TEXT NOT NULL UNIQUE,
      hash TEXT NOT NULL UNIQUE,
      kind TEXT NOT NULL CHECK (kind IN ('account', 'organization')),
      environment TEXT NOT NULL CHECK (environment IN ('live', 'test')),
      account_id TEXT REFERENCES accounts(id),
      organization_id TEXT NOT NULL REFERENCES organizations(id),
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      created_at TEXT NOT NULL,
      revoked_at TEXT,
      CHECK ((kind = 'account') = (account_id IS NOT NULL))
    ) STRICT;

    CREATE TABLE idempotency_keys (
      scope TEXT NOT NULL,
      key TEXT NOT NULL,
      fingerprint TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('running', 'done')),
      boot_id TEXT NOT NULL,
      status_code INTEGER,
      response TEXT,
      content_type TEXT,
      created_at TEXT NOT NULL,
      PRIMARY KEY (scope, key)
    ) STRICT;
    CREATE INDEX idempotency_created ON idempotency_keys(created_at);

    -- The transactional outbox: an event is written in the same transaction as the change it reports.
    CREATE TABLE events (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      type TEXT NOT NULL,
      object_id TEXT,
      payload TEXT NOT NULL,
      created_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX events_account ON events(account_id, live_mode, seq);
    CREATE INDEX events_type ON events(account_id, type, created_at);
  `,
};
