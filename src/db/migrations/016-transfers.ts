import type { Migration } from '../migrate.js';

export const transfers: Migration = {
  version: 16,
  name: 'transfers',
  up: `
    -- Money leaving an account: peer-to-peer transfers (tr_, to another account of the installation)
    -- and withdrawals (wd_, to an external bank account). One table because GET /transfers shows both
    -- in one unified form, which withdrawal events embed too.
    CREATE TABLE transfers (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      kind TEXT NOT NULL CHECK (kind IN ('peer', 'withdrawal')),
      status TEXT NOT NULL CHECK (status IN ('succeeded', 'pending', 'in_transit', 'paid', 'failed')),
      amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
      currency TEXT NOT NULL,
      recipient_account_id TEXT,
      bank_account_id TEXT,
      note TEXT,
      -- The ledger row of the sending account (the debit), of the recipient (the credit), and the row
      -- that gave a failed withdrawal's money back.
      balance_transaction_id TEXT NOT NULL,
      recipient_balance_transaction_id TEXT,
      return_balance_transaction_id TEXT,
      failure_reason TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      in_transit_at TEXT,
      paid_at TEXT,
      failed_at TEXT,
      CHECK ((kind = 'peer') = (recipient_account_id IS NOT NULL AND recipient_balance_transaction_id IS NOT NULL)),
      CHECK ((kind = 'withdrawal') = (bank_account_id IS NOT NULL)),
      CHECK ((kind = 'peer') = (status = 'succeeded'))
    ) STRICT;
    CREATE INDEX transfers_account ON transfers(account_id, live_mode, created_at);
    CREATE INDEX transfers_recipient ON transfers(recipient_account_id, live_mode, created_at) WHERE recipient_account_id IS NOT NULL;
  `,
};
