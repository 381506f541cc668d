import type { Migration } from '../migrate.js';

export const contracts: Migration = {
  version: 66,
  name: 'contracts',
  up: `
    CREATE TABLE contract_templates (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      name TEXT NOT NULL,
      body TEXT NOT NULL,
      signature_required_before TEXT NOT NULL CHECK (signature_required_before IN ('confirmation', 'visit', 'none')),
      signature_valid_for_months INTEGER,
      fields TEXT NOT NULL DEFAULT '[]',
      service_ids TEXT NOT NULL DEFAULT '[]',
      created_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX contract_templates_account ON contract_templates(account_id, created_at);

    CREATE TABLE contracts (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      template_id TEXT NOT NULL REFERENCES contract_templates(id),
      customer_id TEXT NOT NULL,
      customer TEXT NOT NULL,
      booking_id TEXT,
      checkout_id TEXT,
      title TEXT NOT NULL,
      -- The filled text shown to the customer; exactly what body_sha256 hashes once signed.
      body TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('sent', 'viewed', 'signed', 'declined', 'expired')),
      sent_via TEXT CHECK (sent_via IN ('messaging', 'email', 'link')),
      -- The secret part of signing_url (192 random bits): whoever holds the link may read the contract.
      signing_token TEXT NOT NULL UNIQUE,
      signing_url TEXT NOT NULL,
      field_values TEXT NOT NULL DEFAULT '{}',
      verified_channel TEXT CHECK (verified_channel IN ('messaging', 'email', 'sandbox')),
      body_sha256 TEXT,
      pdf_file TEXT,
      code_hash TEXT,
      code_channel TEXT,
      code_expires_at TEXT,
      code_attempts INTEGER NOT NULL DEFAULT 0,
      viewed_at TEXT,
      signed_at TEXT,
      valid_until TEXT,
      declined_at TEXT,
      decline_reason TEXT,
      reminder_sent_at TEXT,
      expires_at TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX contracts_account ON contracts(account_id, created_at);
    CREATE INDEX contracts_open ON contracts(status, created_at);
    CREATE INDEX contracts_customer ON contracts(customer_id, template_id, status);
  `,
};
