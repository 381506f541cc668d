import type { Migration } from '../migrate.js';

/**
 * The money core (issue 3): catalogue, customers, users, checkouts, intents, payment and cash
 * intents, refunds, the ledger and tax invoices. Amounts are integer cents; every object row
 * carries account_id and live_mode.
 */
export const money: Migration = {
  version: 10,
  name: 'money',
  up: `
    CREATE TABLE products (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      name TEXT NOT NULL,
      description TEXT,
      tax_category TEXT NOT NULL CHECK (tax_category IN ('good', 'service')),
      status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
      metadata TEXT NOT NULL DEFAULT '{}',
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX products_account ON products(account_id, live_mode, created_at);

    CREATE TABLE prices (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      product_id TEXT NOT NULL REFERENCES products(id),
      amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
      currency TEXT NOT NULL,
      charge_type TEXT NOT NULL CHECK (charge_type IN ('one_time', 'recurring')),
      billing_interval TEXT,
      billing_interval_count INTEGER,
      created_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX prices_product ON prices(product_id, created_at);

    -- One directory per merchant (merchant_id = the live account), shared by its sandbox: a customer
    -- is a test customer (live_mode 0) until its first real payment (docs/money.md).
    CREATE TABLE customers (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      merchant_id TEXT NOT NULL,
      email TEXT,
      full_name TEXT,
      phone TEXT,
      tax_id TEXT,
      created_at TEXT NOT NULL,
      became_live_at TEXT
    ) STRICT;
    CREATE UNIQUE INDEX customers_email ON customers(merchant_id, live_mode, email) WHERE email IS NOT NULL;
    CREATE INDEX customers_merchant ON customers(merchant_id, created_at);

    CREATE TABLE users (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      email TEXT NOT NULL,
      name TEXT,
      phone TEXT,
      created_at TEXT NOT NULL,
      UNIQUE (account_id, email)
    ) STRICT;

    CREATE TABLE checkouts (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      status TEXT NOT NULL,
      amount_in_cents INTEGER NOT NULL,
      currency TEXT NOT NULL,
      items TEXT NOT NULL,
      metadata TEXT NOT NULL DEFAULT '{}',
      customer_id TEXT,
      expires_at TEXT,
      latest_intent_id TEXT,
      payment_intent_id TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX checkouts_account ON checkouts(account_id, live_mode, created_at);

    -- The unified intent (in_): one per payment attempt of any method.
    CREATE TABLE intents (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      type TEXT NOT NULL CHECK (type IN ('payment', 'bank_transfer', 'crypto', 'balance', 'cash')),
      status TEXT NOT NULL,
      raw_status TEXT NOT NULL,
      legacy_id TEXT NOT NULL UNIQUE,
      payment_id TEXT NOT NULL,
      receipt_number INTEGER NOT NULL,
      amount_in_cents INTEGER NOT NULL,
      currency TEXT NOT NULL,
      customer_id TEXT,
      checkout_id TEXT,
      tax_invoice_url TEXT,
      details TEXT NOT NULL DEFAULT '{}',
      created_at TEXT NOT NULL,
      UNIQUE (account_id, receipt_number)
    ) STRICT;
    CREATE INDEX intents_checkout ON intents(checkout_id);

    CREATE TABLE payment_intents (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      intent_id TEXT NOT NULL UNIQUE,
      checkout_id TEXT NOT NULL,
      method TEXT NOT NULL CHECK (method IN ('card', 'bank_transfer', 'terminal', 'cash')),
      status TEXT NOT NULL CHECK (status IN ('succeeded', 'failed')),
      amount_in_cents INTEGER NOT NULL,
      currency TEXT NOT NULL,
      fee_in_cents INTEGER NOT NULL,
      commission_in_cents INTEGER NOT NULL,
      vat_withheld_in_cents INTEGER NOT NULL,
      customer_id TEXT,
      failure_reason TEXT,
      card_network TEXT,
      card_last4 TEXT,
      authorization_code TEXT,
      processor_reference TEXT,
      installments INTEGER,
      channel TEXT,
      balance_transaction_id TEXT,
      tax_invoice_url TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX payment_intents_checkout ON payment_intents(checkout_id);

    CREATE TABLE cash_intents (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      intent_id TEXT NOT NULL UNIQUE,
      checkout_id TEXT NOT NULL,
      amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
      currency TEXT NOT NULL,
      description TEXT,
      tax_id TEXT,
      customer_id TEXT,
      created_at TEXT NOT NULL
    ) STRICT;

    -- A payment intent is refunded at most once and always in full: the UNIQUE is the last guard.
    CREATE TABLE refunds (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      payment_intent_id TEXT NOT NULL UNIQUE,
      intent_id TEXT NOT NULL,
      status TEXT NOT NULL,
      amount_in_cents INTEGER NOT NULL,
      fee_returned_in_cents INTEGER NOT NULL,
      currency TEXT NOT NULL,
      reason TEXT,
      balance_transaction_id TEXT,
      created_at TEXT NOT NULL
    ) STRICT;

    -- The ledger: append-only; seq orders rows and chains balance_after per account and currency.
    CREATE TABLE balance_transactions (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      id TEXT NOT NULL UNIQUE,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      type TEXT NOT NULL CHECK (type IN ('charge', 'refund', 'payout', 'dispute', 'transfer', 'adjustment')),
      amount_in_cents INTEGER NOT NULL,
      fee_in_cents INTEGER NOT NULL,
      net_amount_in_cents INTEGER NOT NULL,
      currency TEXT NOT NULL,
      balance_after_in_cents INTEGER NOT NULL,
      commission_in_cents INTEGER NOT NULL,
      vat_withheld_in_cents INTEGER NOT NULL,
      source_id TEXT NOT NULL,
      source_type TEXT NOT NULL,
      description TEXT,
      created_at TEXT NOT NULL,
      CHECK (amount_in_cents + fee_in_cents = net_amount_in_cents)
    ) STRICT;
    CREATE INDEX balance_transactions_chain ON balance_transactions(account_id, currency, seq);
    CREATE INDEX balance_transactions_time ON balance_transactions(account_id, live_mode, created_at);

    -- A DTE requested for an intent; pending ones are retried by the worker until the provider answers.
    CREATE TABLE tax_invoices (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      intent_id TEXT NOT NULL UNIQUE,
      tax_id TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('pending', 'issued')),
      document_id TEXT,
      url TEXT,
      attempts INTEGER NOT NULL DEFAULT 0,
      last_error TEXT,
      request TEXT NOT NULL,
      created_at TEXT NOT NULL,
      issued_at TEXT
    ) STRICT;
    CREATE INDEX tax_invoices_pending ON tax_invoices(status, created_at);
  `,
};
