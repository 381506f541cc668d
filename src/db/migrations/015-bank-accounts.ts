import type { Migration } from '../migrate.js';

export const bankAccounts: Migration = {
  version: 15,
  name: 'bank-accounts',
  up: `
    -- External bank accounts, the destinations of withdrawals. Immutable except is_preferred and the
    -- archive (spec 4.3): to change other data the merchant archives and creates a new one.
    CREATE TABLE bank_accounts (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      holder_name TEXT NOT NULL,
      -- Kept whole: central needs it to pay a withdrawal; the API only ever shows it masked.
      number TEXT NOT NULL,
      bank_name TEXT NOT NULL,
      bank_code TEXT NOT NULL,
      currency TEXT NOT NULL CHECK (currency IN ('GTQ', 'USD')),
      account_type TEXT NOT NULL CHECK (account_type IN ('monetaria', 'ahorro')),
      is_preferred INTEGER NOT NULL DEFAULT 0 CHECK (is_preferred IN (0, 1)),
      status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
      created_at TEXT NOT NULL,
      archived_at TEXT,
      CHECK (is_preferred = 0 OR status = 'active')
    ) STRICT;
    CREATE INDEX bank_accounts_account ON bank_accounts(account_id, live_mode, status, created_at);
    -- One preferred account per currency is a rule of the data, not only of the code.
    CREATE UNIQUE INDEX bank_accounts_one_preferred ON bank_accounts(account_id, live_mode, currency) WHERE is_preferred = 1;
  `,
};
