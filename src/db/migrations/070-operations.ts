import type { Migration } from '../migrate.js';

export const operations: Migration = {
  version: 70,
  name: 'operations',
  up: `
    -- Status page sessions of the store manager. Installation-wide, not an account's object, so no
    -- account_id: the manager looks after the box, whatever accounts it serves. Only the SHA-256 of
    -- the session cookie is stored; csrf is the token the page's POST forms must echo.
    CREATE TABLE manager_sessions (
      token_hash TEXT PRIMARY KEY,
      csrf TEXT NOT NULL,
      created_at TEXT NOT NULL,
      expires_at TEXT NOT NULL
    ) STRICT;

    -- Backups taken by the nightly worker or posd backup, for the status page and doctor.
    CREATE TABLE backup_runs (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      file TEXT NOT NULL,
      trigger TEXT NOT NULL CHECK (trigger IN ('nightly', 'manual')),
      started_at TEXT NOT NULL,
      finished_at TEXT NOT NULL,
      bytes INTEGER,
      ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
      error TEXT
    ) STRICT;
  `,
};
