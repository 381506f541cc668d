import type { Migration } from '../migrate.js';

export const connectedAccounts: Migration = {
  version: 64,
  name: 'connected-accounts',
  up: `
    -- What a platform knows of each connected child (one row per environment's child account).
    CREATE TABLE connected_profiles (
      account_id TEXT PRIMARY KEY,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      parent_account_id TEXT NOT NULL,
      -- null for a child connected before posd knew its e-mail (created by other means)
      email TEXT,
      verification_status TEXT NOT NULL CHECK (verification_status IN ('unverified', 'incomplete', 'rejected', 'verified')),
      documents TEXT NOT NULL DEFAULT '{}',
      document_errors TEXT NOT NULL DEFAULT '{}',
      submitted_at TEXT,
      reviewed_at TEXT,
      verified_at TEXT,
      commission_override_mode TEXT CHECK (commission_override_mode IN ('none', 'daily')),
      commission_enabled_at TEXT,
      commission_disabled_at TEXT,
      -- Last Guatemala calendar day (YYYY-MM-DD) whose commissions were invoiced or found empty.
      commission_invoiced_through TEXT,
      tax_invoicing_status TEXT NOT NULL DEFAULT 'inactive' CHECK (tax_invoicing_status IN ('inactive', 'active')),
      tax_invoicing_public TEXT NOT NULL DEFAULT '{}',
      -- The provider's credentials: never serialized to any API response or event.
      tax_invoicing_credentials TEXT NOT NULL DEFAULT '{}',
      tax_invoicing_activated_at TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      UNIQUE (parent_account_id, email)
    ) STRICT;

    CREATE TABLE commission_invoices (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      platform_account_id TEXT NOT NULL,
      day TEXT NOT NULL,
      currency TEXT NOT NULL,
      commission_in_cents INTEGER NOT NULL,
      vat_in_cents INTEGER NOT NULL,
      total_in_cents INTEGER NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('pending', 'issued', 'failed')),
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_at TEXT,
      document_id TEXT,
      url TEXT,
      last_error TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      UNIQUE (account_id, day, currency)
    ) STRICT;
    CREATE INDEX commission_invoices_due ON commission_invoices(status, next_attempt_at);
  `,
};
