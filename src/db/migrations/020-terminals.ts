import type { Migration } from '../migrate.js';

export const terminals: Migration = {
  version: 20,
  name: 'terminals',
  up: `
    -- The terminal registry. The pairing token is stored only as its SHA-256 hash (shown once).
    CREATE TABLE terminals (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      name TEXT NOT NULL,
      transport TEXT NOT NULL CHECK (transport IN ('websocket', 'serial')),
      serial_path TEXT,
      baud_rate INTEGER,
      token_hash TEXT NOT NULL,
      availability TEXT NOT NULL DEFAULT 'unavailable' CHECK (availability IN ('available', 'unavailable')),
      last_seen_at TEXT,
      model TEXT,
      firmware TEXT,
      created_at TEXT NOT NULL,
      retired_at TEXT,
      CHECK ((transport = 'serial') = (serial_path IS NOT NULL))
    ) STRICT;
    CREATE INDEX terminals_account ON terminals(account_id, live_mode, created_at);

    -- Terminal session commands. status/final mirror the persisted XState snapshot (machine.ts is
    -- the only writer of both); the columns exist so lists filter and sort in SQL.
    CREATE TABLE terminal_commands (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      terminal_id TEXT NOT NULL REFERENCES terminals(id),
      external_id TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('pending', 'dispatched', 'cancel_requested', 'canceled', 'superseded', 'consumed', 'failed')),
      final INTEGER NOT NULL CHECK (final IN (0, 1)),
      amount_in_cents INTEGER NOT NULL,
      currency TEXT NOT NULL,
      installments INTEGER,
      description TEXT,
      show_post_payment_screens INTEGER NOT NULL,
      print_receipt INTEGER NOT NULL,
      tax_id TEXT,
      items TEXT,
      checkout_id TEXT NOT NULL,
      checkout_url TEXT,
      snapshot TEXT NOT NULL,
      cancellation_requested_at TEXT,
      canceled_at TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      UNIQUE (account_id, external_id)
    ) STRICT;
    CREATE INDEX terminal_commands_list ON terminal_commands(account_id, live_mode, seq);
    CREATE INDEX terminal_commands_open ON terminal_commands(terminal_id, final, seq);
  `,
};
