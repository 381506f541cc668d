-- posd's schema: every table, index, trigger and starting row of a new database, in one text.
--
-- migrate.ts runs this file in one transaction on a database whose user_version is 0 (a new one),
-- and sets user_version to BASELINE_VERSION (100) and application_id to posd's in the same
-- transaction. From the first release on, this file is never edited: a change to the schema is a
-- new numbered migration in src/db/migrations/ (101, 102, ...), applied on top of it. Until then,
-- nothing has been shipped, so changes are made here.
--
-- Every table is STRICT. Times are ISO-8601 UTC text; money is integer cents; live_mode is 0 or 1.
-- Comments say why a table or column is shaped as it is; what a module does with it is in docs/.


-- ================================================================================================
-- Installation, organizations, accounts and keys
-- ================================================================================================

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
CREATE INDEX accounts_parent ON accounts(parent_account_id, created_at);
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


-- ================================================================================================
-- Outboxes: what a change must tell, written in the transaction that makes the change
-- ================================================================================================

-- The transactional outbox: an event is written in the same transaction as the change it reports.
-- Row counts of the lists per account, environment and key ('' = every row; else the status the
-- list filters on), kept by each table's triggers in the transaction that writes the row: a list's
-- Total-Count reads one row here instead of counting the table (issue 38: a count over 1,000,000
-- rows held the event loop for tens of milliseconds on every poll). A filter these keys do not
-- cover counts its range through an index instead.
CREATE TABLE list_counts (
  list TEXT NOT NULL,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL,
  key TEXT NOT NULL,
  n INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY (list, account_id, live_mode, key)
) STRICT, WITHOUT ROWID;

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
-- No (account_id, live_mode, seq) index: events_account_time serves the activity feed's account
-- filter and count, and the webhook and sync workers read events by seq (the rowid).
CREATE INDEX events_type ON events(account_id, type, created_at);
-- GET /activities reads the outbox newest first by time, per account and environment.
CREATE INDEX events_account_time ON events(account_id, live_mode, created_at);
-- Its Total-Count without a filter (list_counts above).
CREATE TRIGGER events_count_insert AFTER INSERT ON events
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('events', NEW.account_id, NEW.live_mode, '') ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER events_count_delete AFTER DELETE ON events
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'events' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
END;

-- Facts central must learn, appended in the same transaction as the change (see src/sync/outbox.ts).
CREATE TABLE sync_outbox (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  kind TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;


-- ================================================================================================
-- Money (docs/money.md, docs/transfers.md). Amounts are integer cents; every object row carries
-- account_id and live_mode
-- ================================================================================================

CREATE TABLE products (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  name TEXT NOT NULL,
  description TEXT,
  tax_category TEXT NOT NULL CHECK (tax_category IN ('good', 'service')),
  status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
  metadata TEXT NOT NULL DEFAULT '{}',
  -- The hosted service's checkout-page settings of a product (success_url, cancel_url, image_url,
  -- custom_terms_and_conditions, *_requirement, adjustable_quantity) as a JSON object: stored and
  -- answered as given, read by the checkout page.
  page_settings TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  -- Hosted section 4: units left to sell; NULL: not counted. A paid checkout takes its quantity off
  -- (never below 0); at 0 the product is sold out.
  inventory_quantity INTEGER CHECK (inventory_quantity >= 0)
) STRICT;
CREATE INDEX products_account ON products(account_id, live_mode, created_at, id);

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
  created_at TEXT NOT NULL,
  -- Spec 6.4: a recurring price may start with a free trial of this length.
  free_trial_interval TEXT CHECK (free_trial_interval IN ('day', 'week', 'month', 'year')),
  free_trial_interval_count INTEGER,
  -- Hosted price fields (issue 14): a subscription to this price ends by itself after this many
  -- paid periods; a cancel before this many paid periods is refused.
  periods_before_automatic_cancellation INTEGER CHECK (periods_before_automatic_cancellation > 0),
  periods_before_allowed_to_cancel INTEGER CHECK (periods_before_allowed_to_cancel > 0),
  -- `prices_attributes: [{id, _destroy: true}]`: the price is no longer offered, but checkouts and
  -- subscriptions that name it keep it.
  deleted_at TEXT
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
  -- Hosted customer fields (hosted-api.md section 5): a one-line address, and metadata as JSON or null.
  address TEXT,
  metadata TEXT,
  created_at TEXT NOT NULL,
  became_live_at TEXT
) STRICT;
CREATE UNIQUE INDEX customers_email ON customers(merchant_id, live_mode, email) WHERE email IS NOT NULL;
-- GET /customers, newest first per merchant: the index holds the whole order (created_at, then id).
CREATE INDEX customers_merchant ON customers(merchant_id, created_at, id);
-- Its Total-Count (list_counts above), per merchant and per environment's view (spec 5 rule 7, the
-- SCOPE of src/modules/customers/store.ts): the live view (live_mode 1 here) holds live customers and
-- the live account's own; the test view (0) those not yet live. A customer can be in both.
CREATE TRIGGER customers_count_insert AFTER INSERT ON customers
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key)
    SELECT 'customers', NEW.merchant_id, 1, '' WHERE NEW.live_mode = 1 OR NEW.account_id = NEW.merchant_id
    ON CONFLICT DO UPDATE SET n = n + 1;
  INSERT INTO list_counts (list, account_id, live_mode, key)
    SELECT 'customers', NEW.merchant_id, 0, '' WHERE NEW.live_mode = 0
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER customers_count_update AFTER UPDATE OF account_id, live_mode, merchant_id ON customers
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'customers' AND account_id = OLD.merchant_id AND key = ''
    AND ((live_mode = 1 AND (OLD.live_mode = 1 OR OLD.account_id = OLD.merchant_id)) OR (live_mode = 0 AND OLD.live_mode = 0));
  INSERT INTO list_counts (list, account_id, live_mode, key)
    SELECT 'customers', NEW.merchant_id, 1, '' WHERE NEW.live_mode = 1 OR NEW.account_id = NEW.merchant_id
    ON CONFLICT DO UPDATE SET n = n + 1;
  INSERT INTO list_counts (list, account_id, live_mode, key)
    SELECT 'customers', NEW.merchant_id, 0, '' WHERE NEW.live_mode = 0
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER customers_count_delete AFTER DELETE ON customers
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'customers' AND account_id = OLD.merchant_id AND key = ''
    AND ((live_mode = 1 AND (OLD.live_mode = 1 OR OLD.account_id = OLD.merchant_id)) OR (live_mode = 0 AND OLD.live_mode = 0));
END;

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
CREATE INDEX users_list ON users(account_id, live_mode, created_at, id);

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
  -- Where the checkout page sends the buyer after paying or cancelling (the hosted service's fields).
  success_url TEXT,
  cancel_url TEXT,
  -- The split after payment (hosted transfer_setups): JSON [{id, status, amount_in_cents, currency,
  -- recipient_id, transfer_id}], pending until the checkout is paid, then completed or failed.
  transfer_setups TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;
-- GET /checkouts, newest first: each index holds the list's whole order (created_at, then id), so
-- a page reads its rows in order and stops; with ?status= the status column comes before the order.
CREATE INDEX checkouts_account ON checkouts(account_id, live_mode, created_at, id);
CREATE INDEX checkouts_status ON checkouts(account_id, live_mode, status, created_at, id);
-- Total-Count of GET /checkouts without a filter, or with ?status= only (list_counts below).
CREATE TRIGGER checkouts_count_insert AFTER INSERT ON checkouts
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('checkouts', NEW.account_id, NEW.live_mode, ''), ('checkouts', NEW.account_id, NEW.live_mode, NEW.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER checkouts_count_update AFTER UPDATE OF account_id, live_mode, status ON checkouts
WHEN NEW.status IS NOT OLD.status OR NEW.account_id IS NOT OLD.account_id OR NEW.live_mode IS NOT OLD.live_mode
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'checkouts' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key IN ('', OLD.status);
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('checkouts', NEW.account_id, NEW.live_mode, ''), ('checkouts', NEW.account_id, NEW.live_mode, NEW.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER checkouts_count_delete AFTER DELETE ON checkouts
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'checkouts' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key IN ('', OLD.status);
END;

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
  -- Where the intent was first written (see balance_transactions.origin).
  origin TEXT,
  UNIQUE (account_id, receipt_number)
) STRICT;
-- No index by checkout_id: nothing looks intents up by checkout, and every sale would update it.
CREATE INDEX intents_origin ON intents(origin, created_at);
-- GET /intents, newest first, and with ?status= (issue 38).
CREATE INDEX intents_list ON intents(account_id, live_mode, created_at, id);
CREATE INDEX intents_status ON intents(account_id, live_mode, status, created_at, id);

CREATE TABLE payment_intents (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  intent_id TEXT NOT NULL UNIQUE,
  checkout_id TEXT NOT NULL,
  method TEXT NOT NULL CHECK (method IN ('card', 'bank_transfer', 'terminal', 'cash', 'balance', 'crypto')),
  status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled')),
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
  -- A card a terminal approved offline (docs/stored-payments.md): when it stored it and when it
  -- handed it to its processor. Kept after the outcome, so the payment stays recognisable.
  offline_stored_at TEXT,
  offline_forwarded_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  -- The method's hosted id (pay_m_): what the checkout's payment_method.id and the legacy payload
  -- name. A card paid at the checkout page is a saved card (payment_methods, same id); a saved card
  -- charged again keeps its id; other methods get an id of their own.
  payment_method_id TEXT NOT NULL
) STRICT;
CREATE INDEX payment_intents_checkout ON payment_intents(checkout_id);

-- Cards saved by a paid checkout (hosted "payment methods", pay_m_): what POST /one_time_payments
-- charges without the buyer (docs/compatibility.md, "One id per saved card"). posd keeps the card's
-- network and last digits only, never card data: a sandbox charge of it is simulated, a live one is
-- refused (no acquirer for cards that are not present). A subscription's card on file keeps the same
-- id in subscriptions.payment_method_id.
CREATE TABLE payment_methods (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  customer_id TEXT,
  type TEXT NOT NULL CHECK (type IN ('card')),
  card_network TEXT NOT NULL,
  card_last4 TEXT NOT NULL,
  -- The payment that saved it.
  payment_intent_id TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL
) STRICT;

-- A checkout paid from another account's balance (docs/events.md "Balance payments"): the payer's
-- side of a `balance` payment intent (the merchant's side is the payment_intents row): its intent
-- (`intent.paid`) and the debit of its balance.
CREATE TABLE balance_payments (
  id TEXT PRIMARY KEY,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  payment_intent_id TEXT NOT NULL UNIQUE,
  merchant_account_id TEXT NOT NULL,
  payer_account_id TEXT NOT NULL,
  payer_intent_id TEXT NOT NULL UNIQUE,
  payer_balance_transaction_id TEXT NOT NULL,
  amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
  currency TEXT NOT NULL,
  created_at TEXT NOT NULL,
  CHECK (payer_account_id <> merchant_account_id)
) STRICT;
CREATE INDEX balance_payments_payer ON balance_payments(payer_account_id, created_at);

-- A swap between a fiat balance and USDC (docs/events.md "Swaps"); status moves only by the swap
-- machine (src/modules/swaps/machine.ts). The source is debited at creation; the target credited
-- when the exchange confirms (completed), or the source returned when it fails.
CREATE TABLE swaps (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  status TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
  from_currency TEXT NOT NULL,
  to_currency TEXT NOT NULL,
  amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
  to_amount_in_cents INTEGER NOT NULL CHECK (to_amount_in_cents > 0),
  network TEXT NOT NULL,
  transaction_hash TEXT,
  failure_reason TEXT,
  balance_transaction_id TEXT NOT NULL,
  to_balance_transaction_id TEXT,
  return_balance_transaction_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK (from_currency <> to_currency AND 'USDC' IN (from_currency, to_currency))
) STRICT;
CREATE INDEX swaps_account ON swaps(account_id, live_mode, created_at);

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

-- A refund the nexo terminal that took the payment carries out (docs/terminals-nexo.md "Refunds"):
-- the refund stays `pending` until the terminal answers. status is written from
-- src/modules/refunds/terminal-machine.ts only; `sent`: the terminal may hold request `attempt`
-- (its ServiceID derives from refund id and attempt), so its status is asked before anything else.
-- kind `reversal` names the payment's POITransactionID (poi_transaction_id/_at); `refund_payment`
-- is an unreferenced refund (the card presented again).
CREATE TABLE terminal_refunds (
  refund_id TEXT PRIMARY KEY REFERENCES refunds(id),
  terminal_id TEXT NOT NULL REFERENCES terminals(id),
  kind TEXT NOT NULL CHECK (kind IN ('reversal', 'refund_payment')),
  poi_transaction_id TEXT,
  poi_transaction_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'succeeded', 'failed')),
  attempt INTEGER NOT NULL,
  failure_reason TEXT,
  terminal_reference TEXT,
  updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX terminal_refunds_open ON terminal_refunds(terminal_id, status);

-- Disputes (chargebacks) on card payments (src/modules/disputes/): a payment is disputed once. The
-- hold is the negative ledger `dispute` row made on opening; a won dispute's return is the positive one.
CREATE TABLE disputes (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  payment_intent_id TEXT NOT NULL UNIQUE,
  intent_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('needs_response', 'under_review', 'won', 'lost')),
  reason TEXT NOT NULL,
  amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
  currency TEXT NOT NULL,
  balance_transaction_id TEXT NOT NULL,
  reversal_balance_transaction_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  closed_at TEXT,
  CHECK ((reversal_balance_transaction_id IS NOT NULL) = (status = 'won')),
  CHECK ((closed_at IS NOT NULL) = (status IN ('won', 'lost')))
) STRICT;

-- The ledger: append-only; seq orders rows and chains balance_after per account and currency.
CREATE TABLE balance_transactions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  type TEXT NOT NULL CHECK (type IN ('charge', 'refund', 'payout', 'dispute', 'transfer', 'adjustment', 'payment', 'swap')),
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
  -- Where the row was first written, for reconciliation between a store and its central: NULL on
  -- the box that made it; at the central, the store_id whose pushed record wrote it; at a store,
  -- 'central' for a row that arrived through the central's feed. Set at insert (rowOrigin in
  -- src/outbox/origins.ts), never changed after.
  origin TEXT,
  CHECK (amount_in_cents + fee_in_cents = net_amount_in_cents)
) STRICT;
CREATE INDEX balance_transactions_chain ON balance_transactions(account_id, currency, seq);
CREATE INDEX balance_transactions_time ON balance_transactions(account_id, live_mode, created_at);
CREATE INDEX balance_transactions_origin ON balance_transactions(origin, created_at);
-- GET /balance_transactions, newest first (seq descending) per account and environment.
CREATE INDEX balance_transactions_list ON balance_transactions(account_id, live_mode, seq);
-- Its Total-Count without a filter (list_counts below); rows are never updated out of their account.
CREATE TRIGGER balance_transactions_count_insert AFTER INSERT ON balance_transactions
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('balance_transactions', NEW.account_id, NEW.live_mode, '') ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER balance_transactions_count_delete AFTER DELETE ON balance_transactions
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'balance_transactions' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
END;

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
CREATE INDEX bank_accounts_account ON bank_accounts(account_id, live_mode, status, created_at, id);
-- One preferred account per currency is a rule of the data, not only of the code.
CREATE UNIQUE INDEX bank_accounts_one_preferred ON bank_accounts(account_id, live_mode, currency) WHERE is_preferred = 1;

-- Money leaving an account: peer-to-peer transfers (tr_, to another account of the installation)
-- and withdrawals (wd_, to an external bank account). One table because GET /transfers shows both
-- in one unified form, which withdrawal events embed too.
CREATE TABLE transfers (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  kind TEXT NOT NULL CHECK (kind IN ('peer', 'withdrawal')),
  -- peer: succeeded, or in_review then succeeded or cancelled (held above money.transfer_review_above_in_cents);
  -- withdrawal: pending, in_transit, paid, failed.
  status TEXT NOT NULL CHECK (status IN ('succeeded', 'in_review', 'cancelled', 'pending', 'in_transit', 'paid', 'failed')),
  amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
  currency TEXT NOT NULL,
  recipient_account_id TEXT,
  bank_account_id TEXT,
  note TEXT,
  -- The ledger row of the sending account (the debit; a held transfer's reservation), of the
  -- recipient (the credit, once the money moved), and the row that gave a failed withdrawal's or a
  -- cancelled transfer's money back.
  balance_transaction_id TEXT NOT NULL,
  recipient_balance_transaction_id TEXT,
  return_balance_transaction_id TEXT,
  failure_reason TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  in_transit_at TEXT,
  paid_at TEXT,
  failed_at TEXT,
  CHECK ((kind = 'peer') = (recipient_account_id IS NOT NULL)),
  CHECK (kind = 'withdrawal' OR (recipient_balance_transaction_id IS NOT NULL) = (status = 'succeeded')),
  CHECK (kind = 'peer' OR recipient_balance_transaction_id IS NULL),
  CHECK ((kind = 'withdrawal') = (bank_account_id IS NOT NULL)),
  CHECK ((kind = 'peer') = (status IN ('succeeded', 'in_review', 'cancelled')))
) STRICT;
CREATE INDEX transfers_account ON transfers(account_id, live_mode, created_at, id);
CREATE INDEX transfers_kind ON transfers(account_id, live_mode, kind, created_at, id);
CREATE INDEX transfers_recipient ON transfers(recipient_account_id, live_mode, created_at, id) WHERE recipient_account_id IS NOT NULL;


-- ================================================================================================
-- Terminals and their commands
-- ================================================================================================

-- The terminal registry. The pairing token is stored only as its SHA-256 hash (shown once).
CREATE TABLE terminals (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  name TEXT NOT NULL,
  transport TEXT NOT NULL CHECK (transport IN ('websocket', 'serial', 'nexo')),
  serial_path TEXT,
  baud_rate INTEGER,
  -- A nexo terminal (docs/terminals-nexo.md): posd connects to it. The key's passphrase is sealed
  -- with the box's key (src/system/secret-box.ts), never stored in clear.
  nexo_address TEXT,
  nexo_port INTEGER,
  nexo_poiid TEXT,
  nexo_key_identifier TEXT,
  nexo_key_version INTEGER,
  nexo_passphrase_sealed TEXT,
  token_hash TEXT NOT NULL,
  availability TEXT NOT NULL DEFAULT 'unavailable' CHECK (availability IN ('available', 'unavailable')),
  last_seen_at TEXT,
  model TEXT,
  firmware TEXT,
  created_at TEXT NOT NULL,
  retired_at TEXT,
  CHECK ((transport = 'serial') = (serial_path IS NOT NULL)),
  CHECK ((transport = 'nexo') = (nexo_address IS NOT NULL AND nexo_port IS NOT NULL AND nexo_poiid IS NOT NULL
    AND nexo_key_identifier IS NOT NULL AND nexo_key_version IS NOT NULL AND nexo_passphrase_sealed IS NOT NULL))
) STRICT;
CREATE INDEX terminals_account ON terminals(account_id, live_mode, created_at);

-- Terminal session commands. status/final/offered mirror the persisted XState snapshot (machine.ts
-- is the only writer of all three); the columns exist so lists and dispatch filter in SQL without
-- reading XState's snapshot layout. offered: the charge was handed to the terminal's link.
CREATE TABLE terminal_commands (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  terminal_id TEXT NOT NULL REFERENCES terminals(id),
  external_id TEXT NOT NULL,
  -- stored: the terminal approved it offline; the command waits for the stored payment's outcome
  -- (consumed when approved, failed when declined or expired) but the terminal is done with it.
  status TEXT NOT NULL CHECK (status IN ('pending', 'dispatched', 'cancel_requested', 'canceled', 'superseded', 'stored', 'consumed', 'failed')),
  final INTEGER NOT NULL CHECK (final IN (0, 1)),
  offered INTEGER NOT NULL CHECK (offered IN (0, 1)),
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

-- Stored (store-and-forward) card payments, terminal protocol 2 (docs/stored-payments.md): a charge
-- the terminal approved offline. status/final are written from stored/machine.ts only. The card
-- data stays on the terminal; this is the ledger of what it holds and of every state after.
-- over_cap: JSON array of the caps the payment passed when it arrived (NULL: within every cap).
-- late_outcome: a forward result that arrived after the payment was already final (say, approved
-- after posd expired it at its deadline), kept for the manager, never applied.
CREATE TABLE stored_payments (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  terminal_id TEXT NOT NULL REFERENCES terminals(id),
  command_id TEXT NOT NULL UNIQUE REFERENCES terminal_commands(id),
  checkout_id TEXT NOT NULL,
  offline_reference TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('stored', 'forwarded', 'approved', 'declined', 'expired')),
  final INTEGER NOT NULL CHECK (final IN (0, 1)),
  amount_in_cents INTEGER NOT NULL,
  currency TEXT NOT NULL,
  card_network TEXT,
  card_last4 TEXT,
  over_cap TEXT,
  stored_at TEXT NOT NULL,
  forward_by TEXT NOT NULL,
  forwarded_at TEXT,
  settled_at TEXT,
  authorization_code TEXT,
  processor_reference TEXT,
  reason TEXT,
  late_outcome TEXT,
  -- The payment intent (pa_) that waits `pending` while the card is stored and takes its outcome;
  -- null when the checkout could not wait for it (already settled by another path).
  payment_intent_id TEXT,
  updated_at TEXT NOT NULL,
  UNIQUE (terminal_id, offline_reference)
) STRICT;
CREATE INDEX stored_payments_open ON stored_payments(account_id, live_mode, final, forward_by);
CREATE INDEX stored_payments_terminal_open ON stored_payments(terminal_id, final);

-- At a central: the final state of each stored payment a store pushed (`stored_payment` records),
-- written once per id, never moved after (the store runs the lifecycle).
CREATE TABLE central_stored_payments (
  id TEXT PRIMARY KEY,
  origin_store_id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  terminal_id TEXT NOT NULL,
  command_id TEXT NOT NULL,
  checkout_id TEXT NOT NULL,
  payment_intent_id TEXT,
  offline_reference TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('approved', 'declined', 'expired')),
  amount_in_cents INTEGER NOT NULL,
  currency TEXT NOT NULL,
  card_network TEXT,
  card_last4 TEXT,
  over_cap TEXT,
  reason TEXT,
  stored_at TEXT NOT NULL,
  forward_by TEXT NOT NULL,
  forwarded_at TEXT,
  settled_at TEXT NOT NULL,
  -- What the till gave with the charge (the store's command), for the central's to-collect list;
  -- null from a box that did not send it.
  external_id TEXT,
  description TEXT,
  tax_id TEXT
) STRICT;
CREATE INDEX central_stored_payments_account ON central_stored_payments(account_id, live_mode, status);
-- The central's check that a terminal is one store's (stored/central-checks.ts).
CREATE INDEX central_stored_payments_terminal ON central_stored_payments(terminal_id);
-- A store's stored payments in an outage window (ops/outage-central.ts).
CREATE INDEX central_stored_payments_store_time ON central_stored_payments(origin_store_id, stored_at);

-- At a central: every change of a store's offline policy the store reported (`offline_policy_change`
-- records), once per id: who, why, the caps before and after (JSON objects), and whether it was an
-- account's caps, a terminal's, or an override. The latest per account (and per terminal) is the
-- policy the central shows for that store.
CREATE TABLE central_offline_audit (
  id TEXT PRIMARY KEY,
  origin_store_id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  terminal_id TEXT,
  action TEXT NOT NULL CHECK (action IN ('caps_set', 'terminal_caps_set', 'override_allow', 'override_revoke')),
  actor TEXT NOT NULL,
  reason TEXT NOT NULL,
  before TEXT NOT NULL,
  after TEXT NOT NULL,
  at TEXT NOT NULL
) STRICT;
CREATE INDEX central_offline_audit_account ON central_offline_audit(account_id, live_mode, at);
CREATE INDEX central_offline_audit_terminal ON central_offline_audit(terminal_id) WHERE terminal_id IS NOT NULL;

-- An account's own caps of stored payments (else the box's, terminals.offline in the config).
CREATE TABLE offline_caps (
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  allowed INTEGER NOT NULL CHECK (allowed IN (0, 1)),
  max_payment_in_cents INTEGER NOT NULL,
  max_total_in_cents INTEGER NOT NULL,
  max_count INTEGER NOT NULL,
  max_age_hours INTEGER NOT NULL CHECK (max_age_hours BETWEEN 1 AND 168),
  updated_at TEXT NOT NULL,
  PRIMARY KEY (account_id, live_mode)
) STRICT;

-- A manager's override: stored payments allowed (and caps raised where given) until `until_at`.
-- caps: JSON object of the raised caps (a subset of offline_caps' columns).
CREATE TABLE offline_overrides (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  until_at TEXT NOT NULL,
  caps TEXT NOT NULL DEFAULT '{}',
  reason TEXT NOT NULL,
  actor TEXT NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT
) STRICT;
CREATE INDEX offline_overrides_account ON offline_overrides(account_id, live_mode, until_at);

-- A terminal's own caps, beside its account's (the tighter of the two applies); NULL: the account's
-- cap alone. Its totals count that terminal's stored payments only.
CREATE TABLE terminal_offline_caps (
  terminal_id TEXT PRIMARY KEY REFERENCES terminals(id),
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  allowed INTEGER CHECK (allowed IN (0, 1)),
  max_payment_in_cents INTEGER,
  max_total_in_cents INTEGER,
  max_count INTEGER,
  max_age_hours INTEGER CHECK (max_age_hours BETWEEN 1 AND 168),
  updated_at TEXT NOT NULL
) STRICT;

-- Every change of an account's offline policy: who (a named manager, or the shell's --by), when,
-- why, and the caps before and after (JSON objects). terminal_id: the change was a terminal's caps.
CREATE TABLE offline_audit (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  terminal_id TEXT,
  action TEXT NOT NULL CHECK (action IN ('caps_set', 'terminal_caps_set', 'override_allow', 'override_revoke')),
  actor TEXT NOT NULL,
  reason TEXT NOT NULL,
  before TEXT NOT NULL,
  after TEXT NOT NULL,
  at TEXT NOT NULL
) STRICT;


-- ================================================================================================
-- Webhooks (docs/webhooks.md)
-- ================================================================================================

-- Endpoints belong to one account and one environment (a sandbox's endpoints are its own).
-- secret: the signing secret encrypted at rest (see src/system/secret-box.ts).
-- from_seq: events.seq when the endpoint was made; it receives only later events.
CREATE TABLE webhook_endpoints (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  url TEXT NOT NULL,
  description TEXT,
  secret TEXT NOT NULL,
  disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
  disabled_reason TEXT,
  from_seq INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  -- JSON array of event types the endpoint receives; NULL: every type.
  filter_types TEXT,
  -- The secret replaced by a rotation (sealed like secret) and when it stops signing (Unix ms).
  previous_secret TEXT,
  previous_secret_expires_ms INTEGER,
  -- When the endpoint's failing streak began (its first failed attempt since its last success),
  -- and whether the streak's hour-long notice was given.
  failing_since_ms INTEGER,
  failing_noticed INTEGER NOT NULL DEFAULT 0,
  -- When it was disabled and the newest event then: re-enabling can replay what it missed.
  disabled_at_ms INTEGER,
  disabled_seq INTEGER,
  -- Per-endpoint gates (modules/webhooks/gates.ts): messages per second, attempts in flight; NULL: none.
  rate_limit INTEGER,
  max_in_flight INTEGER,
  -- First-in-first-out delivery (docs/webhooks.md): one delivery at a time, in creation order.
  fifo INTEGER NOT NULL DEFAULT 0 CHECK (fifo IN (0, 1)),
  -- JSON object of strings (hosted section 13); '{}' when none.
  metadata TEXT NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX webhook_endpoints_account ON webhook_endpoints(account_id, live_mode, created_at);

-- A bulk replay: its deliveries are the endpoint's rows with seq in [first_seq, last_seq].
CREATE TABLE webhook_replays (
  id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  first_seq INTEGER,
  last_seq INTEGER,
  total INTEGER NOT NULL,
  filters TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX webhook_replays_endpoint ON webhook_replays(endpoint_id);

-- Changes to an endpoint that its own row does not keep (a URL moved): the audit of who changed
-- what, kept after the endpoint is deleted (no foreign key) for the account's records.
CREATE TABLE webhook_endpoint_history (
  seq INTEGER PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  field TEXT NOT NULL,
  old_value TEXT,
  new_value TEXT,
  actor TEXT,
  changed_at TEXT NOT NULL
) STRICT;
CREATE INDEX webhook_endpoint_history_endpoint ON webhook_endpoint_history(endpoint_id, seq);

-- How far the delivery worker has fanned events out (events.seq).
CREATE TABLE webhook_cursor (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL
) STRICT;
INSERT INTO webhook_cursor (id, seq) VALUES (1, 0);

-- One row per event and endpoint, written at fan-out and updated once per attempt. Keyed by seq
-- (the rowid, in creation order) so those writes append instead of landing on random index pages
-- (docs/webhooks.md). One delivery per (endpoint, event) is kept by the fan-out itself, which makes
-- no row for an event at or before the cursor and moves the cursor in the same transaction.
CREATE TABLE webhook_deliveries (
  seq INTEGER PRIMARY KEY,
  -- NULL: the id is derived from seq (delivery-ids.ts).
  id TEXT,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  -- The webhook-id (msg_…): the same on every attempt.
  event_id TEXT NOT NULL,
  -- events.seq of the event delivered; NULL for test sends, which are not events.
  event_seq INTEGER,
  event_type TEXT NOT NULL,
  event_account_id TEXT NOT NULL,
  -- Set only for test sends, which are not events of the account.
  payload TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'canceled')),
  attempts INTEGER NOT NULL DEFAULT 0,
  auto_attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms INTEGER,
  last_response_code INTEGER,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  -- 1: in its endpoint's first-in-first-out order. A pending one waits "parked" (next_attempt_ms
  -- NULL) until the one before it succeeded or was given up; only the head has a schedule.
  fifo INTEGER NOT NULL DEFAULT 0 CHECK (fifo IN (0, 1)),
  -- The bulk replay (webhook_replays.id) that made this delivery; NULL for every other delivery.
  replay_id TEXT
) STRICT;
-- A first-in-first-out endpoint's pending deliveries: its head (next_attempt_ms set) and the parked
-- ones after it, in seq order. Other deliveries never enter it (no cost to the fan-out).
CREATE INDEX webhook_deliveries_fifo ON webhook_deliveries(endpoint_id, next_attempt_ms) WHERE status = 'pending' AND fifo = 1;
-- Stored ids only (test sends): a new fan-out row is not in this index at all.
CREATE UNIQUE INDEX webhook_deliveries_stored_id ON webhook_deliveries(id) WHERE id IS NOT NULL;
-- Due deliveries in order, the seq (rowid) read from the index alone.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_ms, endpoint_id) WHERE status = 'pending';
-- An endpoint's deliveries in seq (creation) order: the rowid ends every index entry.
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id);

-- Every attempt is a row, keyed (delivery_seq, attempt): appends.
CREATE TABLE webhook_attempts (
  delivery_seq INTEGER NOT NULL REFERENCES webhook_deliveries(seq) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  manual INTEGER NOT NULL CHECK (manual IN (0, 1)),
  webhook_timestamp INTEGER NOT NULL,
  attempted_at TEXT NOT NULL,
  duration_ms INTEGER NOT NULL,
  response_code INTEGER,
  error TEXT,
  -- The start of the answer's body: its first 1,024 bytes as UTF-8 (post.ts); NULL without one.
  response_body TEXT,
  PRIMARY KEY (delivery_seq, attempt)
) STRICT, WITHOUT ROWID;

-- Where an account's operational notices go (docs/webhooks.md, Notices): a URL, told signed the
-- Standard Webhooks way with its own secret (sealed like endpoint secrets), and/or an e-mail address.
CREATE TABLE webhook_notice_settings (
  account_id TEXT PRIMARY KEY,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  url TEXT,
  secret TEXT,
  email TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;

-- One row per transition told (an endpoint started failing, was disabled, a message exhausted its
-- attempts), written in the transaction of the transition itself; `transition` is unique, so a
-- transition is told once however often it is looked at. Each channel has its own progress
-- (none: not configured when recorded; skipped: not sent on that channel by rule).
CREATE TABLE webhook_notices (
  seq INTEGER PRIMARY KEY,
  -- The webhook-id (msg_…): the same on every try.
  id TEXT NOT NULL UNIQUE,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  type TEXT NOT NULL,
  endpoint_id TEXT NOT NULL,
  transition TEXT NOT NULL UNIQUE,
  payload TEXT NOT NULL,
  url_status TEXT NOT NULL CHECK (url_status IN ('none', 'pending', 'sent', 'failed')),
  email_status TEXT NOT NULL CHECK (email_status IN ('none', 'skipped', 'pending', 'sent', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  -- Set while a channel is pending: when to try next.
  next_attempt_ms INTEGER,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX webhook_notices_due ON webhook_notices(next_attempt_ms) WHERE next_attempt_ms IS NOT NULL;
CREATE INDEX webhook_notices_endpoint ON webhook_notices(endpoint_id, type);

-- The key of the permutation that derives a delivery's public whd_ id from its seq
-- (src/modules/webhooks/delivery-ids.ts): made once, with the database, and kept in it.
CREATE TABLE webhook_delivery_ids_key (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  key BLOB NOT NULL
) STRICT;
INSERT INTO webhook_delivery_ids_key (id, key) VALUES (1, randomblob(32));


-- ================================================================================================
-- Sync between a store and its central (docs/sync.md)
-- ================================================================================================

-- Store side: the push cursor (highest seq central acknowledged), the feed cursor, the store id
-- and the last outcome of each loop. One row per key, written in the transaction that moves it.
CREATE TABLE sync_state (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

-- Store side: when a link of this box went down and came back (docs/stored-payments.md, "After an
-- outage"). link 'central': the sync worker's first unanswered attempt after a success, closed by
-- the next answer; 'processor': the first stored card payment (a terminal without its processor),
-- closed by the first forward result or online approval. ended_at NULL: still down. At most one
-- open row per link. reported: 1 once the ended window's `outage_window` record is in the sync
-- outbox (ops/outage-sync.ts), so the central can serve the report across its stores.
CREATE TABLE outage_windows (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  link TEXT NOT NULL CHECK (link IN ('central', 'processor')),
  started_at TEXT NOT NULL,
  ended_at TEXT,
  reported INTEGER NOT NULL DEFAULT 0 CHECK (reported IN (0, 1))
) STRICT;
CREATE UNIQUE INDEX outage_windows_open ON outage_windows(link) WHERE ended_at IS NULL;
CREATE INDEX outage_windows_time ON outage_windows(started_at);
CREATE INDEX outage_windows_unreported ON outage_windows(seq) WHERE ended_at IS NOT NULL AND reported = 0;

-- Central side: the outage windows the stores reported (`outage_window` records, ops/outage-sync.ts),
-- once per store, link and start; what `/api/outage_reports` serves at a central. taken_offline: the
-- JSON array of what the box stored offline during a processor window, per terminal and currency.
CREATE TABLE central_outage_windows (
  id TEXT PRIMARY KEY,
  origin_store_id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  link TEXT NOT NULL CHECK (link IN ('central', 'processor')),
  started_at TEXT NOT NULL,
  ended_at TEXT NOT NULL,
  taken_offline TEXT NOT NULL,
  UNIQUE (origin_store_id, link, started_at)
) STRICT;
CREATE INDEX central_outage_windows_time ON central_outage_windows(started_at);

-- Central side: one row per store box (its own store_id, bound to the account whose key pushes).
CREATE TABLE sync_stores (
  store_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  -- received_seq: the highest seq durably received (a push answers with it; the box's cursor).
  -- applied_seq: the projector's cursor, moved in the transaction that applies the records up to it
  -- (reconciliation's "behind" compares it). received_seq - applied_seq is the projection's lag.
  received_seq INTEGER NOT NULL DEFAULT 0,
  applied_seq INTEGER NOT NULL DEFAULT 0,
  last_push_at TEXT,
  created_at TEXT NOT NULL,
  -- How many of its records are in each outcome but 'applied', kept by the triggers on
  -- sync_received below, so neither a push nor GET /sync/stores counts a store's whole history.
  held_count INTEGER NOT NULL DEFAULT 0,
  rejected_count INTEGER NOT NULL DEFAULT 0,
  parked_count INTEGER NOT NULL DEFAULT 0,
  skipped_count INTEGER NOT NULL DEFAULT 0,
  -- What the box said it still held after its last push (records, the oldest one's time): its
  -- backlog, as of last_push_at. NULL: never said.
  box_waiting INTEGER,
  box_waiting_since TEXT
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
  -- received: durably received, not yet applied by the projector (every record past the store's
  -- applied_seq, none before it); held: acknowledged, applied later (no applier yet, or an operator's retry); parked: its applier
  -- failed, so it waits for an operator (posd sync retry / skip) while the store's others flow on;
  -- skipped: an operator gave up on it, with `note` saying why.
  outcome TEXT NOT NULL CHECK (outcome IN ('received', 'applied', 'rejected', 'held', 'parked', 'skipped')),
  reason TEXT,
  -- When it was parked or skipped, and the operator's reason for a skip (kept and reported).
  decided_at TEXT,
  note TEXT,
  UNIQUE (store_id, seq)
) STRICT;
-- Reconciliation reads one store's day: the day's range is the second column, so a filter on kind
-- (events, or every kind but events) reads that day's records only, never the store's history.
CREATE INDEX sync_received_day ON sync_received(store_id, created_at, kind);
-- Per store and in its order, as a push reads its store's held records first: the few held rows,
-- not the store's history (the (store_id, seq) key would read every record the store ever pushed).
CREATE INDEX sync_received_held ON sync_received(store_id, seq) WHERE outcome = 'held';
CREATE INDEX sync_received_parked ON sync_received(store_id, seq) WHERE outcome = 'parked';
CREATE INDEX sync_received_skipped ON sync_received(store_id, seq) WHERE outcome = 'skipped';
-- The per-store outcome counters of sync_stores, kept by the table itself whoever writes it (a push,
-- the held sweep, an operator's retry or skip), so they cannot drift from the rows. An applied
-- record, nearly every one, costs nothing: the WHEN clauses pass it by (received, then applied).
CREATE TRIGGER sync_received_count_insert AFTER INSERT ON sync_received
WHEN NEW.outcome NOT IN ('received', 'applied')
BEGIN
  UPDATE sync_stores SET held_count = held_count + (NEW.outcome = 'held'),
    rejected_count = rejected_count + (NEW.outcome = 'rejected'),
    parked_count = parked_count + (NEW.outcome = 'parked'),
    skipped_count = skipped_count + (NEW.outcome = 'skipped')
  WHERE store_id = NEW.store_id;
END;
CREATE TRIGGER sync_received_count_update AFTER UPDATE OF outcome ON sync_received
WHEN NEW.outcome IS NOT OLD.outcome AND (OLD.outcome NOT IN ('received', 'applied') OR NEW.outcome NOT IN ('received', 'applied'))
BEGIN
  UPDATE sync_stores SET held_count = held_count + (NEW.outcome = 'held') - (OLD.outcome = 'held'),
    rejected_count = rejected_count + (NEW.outcome = 'rejected') - (OLD.outcome = 'rejected'),
    parked_count = parked_count + (NEW.outcome = 'parked') - (OLD.outcome = 'parked'),
    skipped_count = skipped_count + (NEW.outcome = 'skipped') - (OLD.outcome = 'skipped')
  WHERE store_id = NEW.store_id;
END;
CREATE TRIGGER sync_received_count_delete AFTER DELETE ON sync_received
WHEN OLD.outcome NOT IN ('received', 'applied')
BEGIN
  UPDATE sync_stores SET held_count = held_count - (OLD.outcome = 'held'),
    rejected_count = rejected_count - (OLD.outcome = 'rejected'),
    parked_count = parked_count - (OLD.outcome = 'parked'),
    skipped_count = skipped_count - (OLD.outcome = 'skipped')
  WHERE store_id = OLD.store_id;
END;

-- Central side: the change feed stores pull, per account (organization-wide rows have no account).
CREATE TABLE sync_feed (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  organization_id TEXT NOT NULL,
  account_id TEXT,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  kind TEXT NOT NULL,
  object_id TEXT,
  payload TEXT NOT NULL,
  created_at TEXT NOT NULL,
  -- Central side: the store box whose push made this change (NULL: made at the central). The feed
  -- never sends a change back to the box it came from; other boxes of the account still get it.
  origin_store_id TEXT,
  -- The only box that gets this change (NULL: every box of the account). A refusal of a record is
  -- news for the box that pushed it, not for the other boxes of the account.
  to_store_id TEXT
) STRICT;
CREATE INDEX sync_feed_account ON sync_feed(account_id, seq);
CREATE INDEX sync_feed_org ON sync_feed(organization_id, seq);

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


-- ================================================================================================
-- Scheduling: bookable things, bookings, class sessions and calendar feeds (spec 2.1, 2.2, 2.5;
-- docs/scheduling.md)
-- ================================================================================================

CREATE TABLE sched_services (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  kind TEXT NOT NULL CHECK (kind IN ('appointment', 'class', 'lodging')),
  name TEXT NOT NULL,
  description TEXT,
  duration_minutes INTEGER NOT NULL,
  processing_minutes INTEGER NOT NULL DEFAULT 0,
  final_minutes INTEGER NOT NULL DEFAULT 0,
  price_in_cents INTEGER NOT NULL,
  currency TEXT NOT NULL,
  product_id TEXT,
  payment_policy TEXT NOT NULL CHECK (payment_policy IN ('none', 'card_on_file', 'deposit', 'full')),
  deposit_in_cents INTEGER,
  protection_in_cents INTEGER,
  hold_minutes INTEGER,
  capacity INTEGER,
  max_guests INTEGER,
  active INTEGER NOT NULL DEFAULT 1,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX sched_services_account ON sched_services(account_id, live_mode, created_at, id);

CREATE TABLE sched_staff_members (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  name TEXT NOT NULL,
  email TEXT,
  phone TEXT,
  service_ids TEXT NOT NULL DEFAULT '[]',
  active INTEGER NOT NULL DEFAULT 1,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX sched_staff_account ON sched_staff_members(account_id, live_mode, created_at, id);

CREATE TABLE sched_resources (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  name TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('room', 'chair', 'equipment', 'lodging_unit')),
  room_type_id TEXT REFERENCES sched_services(id),
  active INTEGER NOT NULL DEFAULT 1,
  -- Secret part of the public .ics URL; anyone holding the URL reads the unit's busy nights.
  calendar_token TEXT NOT NULL UNIQUE,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX sched_resources_account ON sched_resources(account_id, live_mode, created_at, id);
CREATE INDEX sched_resources_room_type ON sched_resources(room_type_id);

CREATE TABLE sched_class_sessions (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  service_id TEXT NOT NULL REFERENCES sched_services(id),
  name TEXT NOT NULL,
  staff_member_id TEXT REFERENCES sched_staff_members(id),
  resource_id TEXT REFERENCES sched_resources(id),
  starts_at TEXT NOT NULL,
  ends_at TEXT NOT NULL,
  capacity INTEGER NOT NULL,
  cancelled_at TEXT,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX sched_class_sessions_account ON sched_class_sessions(account_id, live_mode, starts_at, id);

CREATE TABLE sched_booking_series (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  frequency TEXT NOT NULL CHECK (frequency IN ('daily', 'weekly')),
  interval INTEGER NOT NULL,
  count INTEGER NOT NULL,
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE sched_bookings (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  status TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'checked_in', 'completed', 'cancelled', 'no_show')),
  source TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('appointment', 'class_seat', 'stay')),
  service_id TEXT NOT NULL REFERENCES sched_services(id),
  requires_acceptance INTEGER NOT NULL DEFAULT 0 CHECK (requires_acceptance IN (0, 1)),
  starts_at TEXT NOT NULL,
  ends_at TEXT NOT NULL,
  customer_id TEXT NOT NULL,
  customer_name TEXT,
  customer_email TEXT,
  customer_phone TEXT,
  segments TEXT NOT NULL,
  staff_member_id TEXT,
  resource_id TEXT,
  class_session_id TEXT REFERENCES sched_class_sessions(id),
  stay TEXT,
  payment_policy TEXT NOT NULL,
  currency TEXT NOT NULL,
  total_in_cents INTEGER NOT NULL,
  due_in_cents INTEGER NOT NULL,
  paid_in_cents INTEGER NOT NULL DEFAULT 0,
  balance_in_cents INTEGER NOT NULL,
  balance_paid_outside_at TEXT,
  checkout_id TEXT,
  checkout_url TEXT,
  balance_checkout_id TEXT,
  balance_checkout_url TEXT,
  no_show_fee_checkout_id TEXT,
  booking_series_id TEXT REFERENCES sched_booking_series(id),
  access_token TEXT NOT NULL,
  customer_note TEXT,
  merchant_note TEXT,
  accepted_at TEXT,
  hold_expires_at TEXT,
  cancelled_by TEXT,
  cancellation_reason TEXT,
  rescheduled_from_id TEXT,
  -- Refund bookkeeping of declinations and class cancellations: a seat is refunded at most once.
  payment_intent_ids TEXT NOT NULL DEFAULT '[]',
  refund_due INTEGER NOT NULL DEFAULT 0 CHECK (refund_due IN (0, 1)),
  -- Why a refund is owed: 'declined', 'class_session_cancelled' (retried by calling again) or
  -- 'late_payment' (a checkout paid after its booking was cancelled; the worker refunds it).
  refund_reason TEXT,
  refunded_at TEXT,
  refund_ids TEXT NOT NULL DEFAULT '[]',
  refunded_intent_ids TEXT NOT NULL DEFAULT '[]',
  refund_error TEXT,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  -- At the central, the store box that made the booking and pushed it (NULL: made here). The
  -- central's own workers (hold expiry, subscription billing, contract reminders and expiry) leave
  -- such objects to that store, which already runs them; the central learns each step as a record.
  origin_store_id TEXT
) STRICT;
CREATE INDEX sched_bookings_time ON sched_bookings(account_id, live_mode, starts_at, created_at, id);
CREATE INDEX sched_bookings_status ON sched_bookings(account_id, live_mode, status, starts_at, created_at, id);
CREATE INDEX sched_bookings_session ON sched_bookings(class_session_id, status);
CREATE INDEX sched_bookings_pending ON sched_bookings(status, hold_expires_at);
CREATE INDEX sched_bookings_customer ON sched_bookings(customer_id);
CREATE INDEX sched_bookings_refund_due ON sched_bookings(refund_due, refund_reason);

-- What a booking or class session occupies: a staff member's or resource's time, or a unit's
-- nights (subject 'night:<res_id>', times are dates). Rows exist only while the slot is held, so
-- the overlap check is one indexed query inside the booking's IMMEDIATE transaction.
CREATE TABLE sched_occupancy (
  owner_id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  subject TEXT NOT NULL,
  starts_at TEXT NOT NULL,
  ends_at TEXT NOT NULL,
  CHECK (starts_at < ends_at)
) STRICT;
CREATE INDEX sched_occupancy_owner ON sched_occupancy(owner_id);
-- The overlap check reads a subject's occupancy by where it ENDS (docs/scheduling.md, "Measured"):
-- `starts_at < :to AND ends_at > :from` walks only the rows that end after the new slot starts (the
-- subject's future, which a calendar bounds), not all of its past. starts_at and owner_id are in
-- the key so the walk never reads the table.
CREATE INDEX sched_occupancy_subject_end ON sched_occupancy(subject, ends_at, starts_at, owner_id);

CREATE TABLE sched_service_tabs (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  booking_id TEXT NOT NULL REFERENCES sched_bookings(id),
  status TEXT NOT NULL CHECK (status IN ('open', 'closed')),
  items TEXT NOT NULL DEFAULT '[]',
  checkout_id TEXT,
  checkout_url TEXT,
  created_at TEXT NOT NULL,
  closed_at TEXT
) STRICT;

CREATE TABLE sched_ical_feeds (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  resource_id TEXT NOT NULL REFERENCES sched_resources(id),
  label TEXT NOT NULL,
  url TEXT NOT NULL,
  last_synced_at TEXT,
  last_error TEXT,
  next_sync_at TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX sched_ical_feeds_resource ON sched_ical_feeds(resource_id);
CREATE INDEX sched_ical_feeds_due ON sched_ical_feeds(next_sync_at);

-- Nights a feed blocks, replaced as a whole after each good read (a failed read keeps them).
CREATE TABLE sched_feed_blocks (
  feed_id TEXT NOT NULL REFERENCES sched_ical_feeds(id),
  resource_id TEXT NOT NULL,
  start_on TEXT NOT NULL,
  end_on TEXT NOT NULL,
  uid TEXT,
  summary TEXT,
  CHECK (start_on < end_on)
) STRICT;
CREATE INDEX sched_feed_blocks_resource ON sched_feed_blocks(resource_id, start_on);
CREATE INDEX sched_feed_blocks_feed ON sched_feed_blocks(feed_id);


-- ================================================================================================
-- Store shipping (docs/store-shipping.md)
-- ================================================================================================

-- One catalogue per account (destinations and their options, JSON validated by the module).
-- A catalogue is read whole for every quote and edited whole: one row keeps it consistent.
CREATE TABLE store_shipping_settings (
  account_id TEXT PRIMARY KEY,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  catalogue TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;


-- ================================================================================================
-- Coupons (docs/coupons.md)
-- ================================================================================================

CREATE TABLE coupons (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  name TEXT NOT NULL,
  -- name folded (upper case, trimmed): the code a buyer types matches it whatever the case
  code_key TEXT NOT NULL,
  discount_mode TEXT NOT NULL CHECK (discount_mode IN ('code', 'bank', 'custom_bins')),
  display_name TEXT,
  amount_off_in_cents INTEGER,
  percent_off REAL,
  currency TEXT,
  automatically_applies INTEGER NOT NULL CHECK (automatically_applies IN (0, 1)),
  max_redemptions INTEGER,
  times_redeemed INTEGER NOT NULL DEFAULT 0,
  duration TEXT NOT NULL CHECK (duration IN ('once', 'repeating', 'forever')),
  duration_in_payments INTEGER,
  minimum_amount_in_cents INTEGER,
  once_per_customer INTEGER NOT NULL CHECK (once_per_customer IN (0, 1)),
  product_ids TEXT NOT NULL DEFAULT '[]',
  starts_at TEXT,
  expires_at TEXT,
  archived INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK ((amount_off_in_cents IS NULL) <> (percent_off IS NULL))
) STRICT;
CREATE INDEX coupons_account ON coupons(account_id, created_at);
CREATE UNIQUE INDEX coupons_code ON coupons(account_id, code_key) WHERE archived = 0;

-- One row per paid checkout that carried the coupon: limits and once-per-customer count these.
CREATE TABLE coupon_redemptions (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  coupon_id TEXT NOT NULL REFERENCES coupons(id),
  checkout_id TEXT NOT NULL,
  customer_id TEXT,
  amount_off_in_cents INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (coupon_id, checkout_id)
) STRICT;
CREATE INDEX coupon_redemptions_customer ON coupon_redemptions(coupon_id, customer_id);

-- The coupons a checkout carries (owned by the coupons module, keyed by the checkout id): the
-- codes typed are kept so a changed checkout is priced again with them, and payment redeems them.
CREATE TABLE checkout_coupons (
  checkout_id TEXT NOT NULL,
  coupon_id TEXT NOT NULL REFERENCES coupons(id),
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  code TEXT,
  automatic INTEGER NOT NULL CHECK (automatic IN (0, 1)),
  amount_off_in_cents INTEGER NOT NULL,
  position INTEGER NOT NULL,
  PRIMARY KEY (checkout_id, coupon_id)
) STRICT;


-- ================================================================================================
-- Reports (docs/reports.md)
-- ================================================================================================

-- A report is generated by a worker; the row says where it stands and, once succeeded, what the
-- file holds (size and hash), so a download can never hand out a different or partial file.
CREATE TABLE report_runs (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  report_type TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
  parameters TEXT NOT NULL,
  file_name TEXT,
  size_bytes INTEGER,
  sha256 TEXT,
  row_count INTEGER,
  error TEXT,
  boot_id TEXT,
  created_at TEXT NOT NULL,
  started_at TEXT,
  succeeded_at TEXT,
  failed_at TEXT,
  CHECK ((status = 'succeeded') = (sha256 IS NOT NULL))
) STRICT;
CREATE INDEX report_runs_account ON report_runs(account_id, created_at);
CREATE INDEX report_runs_status ON report_runs(status, created_at);


-- ================================================================================================
-- Connected accounts (docs/connected-accounts.md)
-- ================================================================================================

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


-- ================================================================================================
-- Subscriptions (docs/subscriptions.md)
-- ================================================================================================

CREATE TABLE subscriptions (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  customer_id TEXT,
  product_id TEXT NOT NULL,
  price_id TEXT NOT NULL,
  amount_in_cents INTEGER NOT NULL,
  currency TEXT NOT NULL,
  billing_interval TEXT NOT NULL CHECK (billing_interval IN ('day', 'week', 'month', 'year')),
  billing_interval_count INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'past_due', 'paused', 'canceled', 'unable_to_start')),
  current_period_start TEXT NOT NULL,
  current_period_end TEXT NOT NULL,
  -- Automatic charges failed in a row; the first failure fixes the retry schedule (+3 and +5 days).
  failed_attempts INTEGER NOT NULL DEFAULT 0,
  first_failure_at TEXT,
  next_retry_at TEXT,
  paused_at TEXT,
  canceled_at TEXT,
  cancel_reason TEXT,
  origin_checkout_id TEXT NOT NULL,
  latest_checkout_id TEXT,
  card_network TEXT,
  card_last4 TEXT,
  -- Sandbox only: the outcome the sandbox "card on file" gives automatic charges (set by the advance helper).
  sandbox_outcome TEXT NOT NULL DEFAULT 'succeeded' CHECK (sandbox_outcome IN ('succeeded', 'failed')),
  -- Optimistic lock: a transition applies once even if the biller and a request race.
  version INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  -- Set while the subscription is in its free trial (no charge made yet); cleared by the first successful charge.
  trial_end TEXT,
  setup_intent_id TEXT,
  -- See sched_bookings.origin_store_id.
  origin_store_id TEXT,
  -- Periods the subscriber has paid (the first checkout's included; a free trial is not one).
  periods_paid INTEGER NOT NULL DEFAULT 0,
  -- From the price when the subscription started (prices never change): the automatic end after
  -- this many paid periods, and the minimum paid periods before a requested cancel.
  cancel_after_periods INTEGER,
  minimum_periods INTEGER,
  -- The saved card's hosted id (pay_m_...): default_payment_method, and what POST /one_time_payments charges.
  payment_method_id TEXT,
  UNIQUE (origin_checkout_id, price_id)
) STRICT;
CREATE INDEX subscriptions_payment_method ON subscriptions(payment_method_id) WHERE payment_method_id IS NOT NULL;
CREATE INDEX subscriptions_account ON subscriptions(account_id, live_mode, created_at);
CREATE INDEX subscriptions_status ON subscriptions(account_id, live_mode, status, created_at);
CREATE INDEX subscriptions_due ON subscriptions(status, current_period_end);
CREATE INDEX subscriptions_retry ON subscriptions(status, next_retry_at);

-- Recurring products added to a subscription beside the one it was started with, and one-time
-- charges waiting for the next renewal (spec 6.2 subscription.item_added/item_removed/invoice_item_added).
CREATE TABLE subscription_items (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  subscription_id TEXT NOT NULL REFERENCES subscriptions(id),
  product_id TEXT NOT NULL,
  price_id TEXT NOT NULL,
  name TEXT NOT NULL,
  amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
  quantity INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 9),
  tax_category TEXT NOT NULL,
  created_at TEXT NOT NULL,
  -- Kept after removal so the history stays readable; only rows without it are billed.
  removed_at TEXT
) STRICT;
CREATE INDEX subscription_items_sub ON subscription_items(subscription_id, created_at);

CREATE TABLE subscription_invoice_items (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
  subscription_id TEXT NOT NULL REFERENCES subscriptions(id),
  description TEXT NOT NULL,
  amount_in_cents INTEGER NOT NULL CHECK (amount_in_cents > 0),
  created_at TEXT NOT NULL,
  -- The renewal checkout that charged it; null while it waits for the next successful charge.
  billed_checkout_id TEXT
) STRICT;
CREATE INDEX subscription_invoice_items_sub ON subscription_invoice_items(subscription_id, created_at);


-- ================================================================================================
-- Contracts (docs/contracts.md)
-- ================================================================================================

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
CREATE INDEX contract_templates_account ON contract_templates(account_id, live_mode, created_at);

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
  updated_at TEXT NOT NULL,
  -- See sched_bookings.origin_store_id.
  origin_store_id TEXT
) STRICT;
CREATE INDEX contracts_account ON contracts(account_id, live_mode, created_at);
CREATE INDEX contracts_open ON contracts(status, created_at);
CREATE INDEX contracts_customer ON contracts(customer_id, template_id, status);


-- ================================================================================================
-- Operations (docs/operations.md)
-- ================================================================================================

-- Status page sessions of the store manager. Installation-wide, not an account's object, so no
-- account_id: the manager looks after the box, whatever accounts it serves. Only the SHA-256 of
-- the session cookie is stored; csrf is the token the page's POST forms must echo.
-- The box's managers, each with a name and a password of their own (scrypt, src/modules/ops/password.ts)
-- and optionally a manager token for the API's policy changes (only its SHA-256 is kept). A box
-- set up with the single status-page password of earlier builds gets that password as the manager
-- named `manager` at first open (src/modules/ops/managers.ts).
CREATE TABLE managers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE COLLATE NOCASE,
  password_hash TEXT NOT NULL,
  token_hash TEXT UNIQUE,
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE manager_sessions (
  token_hash TEXT PRIMARY KEY,
  -- The person the session belongs to: every change made from it names them.
  manager_id TEXT REFERENCES managers(id),
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
  error TEXT,
  -- JSON array of what a good backup left out (secrets without backup.passphrase); NULL: nothing.
  left_out TEXT
) STRICT;

-- Total-Count of the other lists (list_counts above; decision 0270): every row of an account and
-- environment, and per status where the list filters on it. A filter not covered here counts its
-- range through the list's index.
CREATE TRIGGER intents_count_insert AFTER INSERT ON intents
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('intents', NEW.account_id, NEW.live_mode, ''), ('intents', NEW.account_id, NEW.live_mode, NEW.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER intents_count_update AFTER UPDATE OF account_id, live_mode, status ON intents
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'intents' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key IN ('', OLD.status);
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('intents', NEW.account_id, NEW.live_mode, ''), ('intents', NEW.account_id, NEW.live_mode, NEW.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER intents_count_delete AFTER DELETE ON intents
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'intents' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key IN ('', OLD.status);
END;

CREATE TRIGGER users_count_insert AFTER INSERT ON users
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('users', NEW.account_id, NEW.live_mode, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER users_count_update AFTER UPDATE OF account_id, live_mode ON users
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'users' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('users', NEW.account_id, NEW.live_mode, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER users_count_delete AFTER DELETE ON users
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'users' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
END;

CREATE TRIGGER swaps_count_insert AFTER INSERT ON swaps
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('swaps', NEW.account_id, NEW.live_mode, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER swaps_count_update AFTER UPDATE OF account_id, live_mode ON swaps
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'swaps' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('swaps', NEW.account_id, NEW.live_mode, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER swaps_count_delete AFTER DELETE ON swaps
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'swaps' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
END;

CREATE TRIGGER products_count_insert AFTER INSERT ON products
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('products', NEW.account_id, NEW.live_mode, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER products_count_update AFTER UPDATE OF account_id, live_mode ON products
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'products' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('products', NEW.account_id, NEW.live_mode, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER products_count_delete AFTER DELETE ON products
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'products' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
END;

CREATE TRIGGER contract_templates_count_insert AFTER INSERT ON contract_templates
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('contract_templates', NEW.account_id, NEW.live_mode, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER contract_templates_count_update AFTER UPDATE OF account_id, live_mode ON contract_templates
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'contract_templates' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('contract_templates', NEW.account_id, NEW.live_mode, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER contract_templates_count_delete AFTER DELETE ON contract_templates
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'contract_templates' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
END;

CREATE TRIGGER contracts_count_insert AFTER INSERT ON contracts
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('contracts', NEW.account_id, NEW.live_mode, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER contracts_count_update AFTER UPDATE OF account_id, live_mode ON contracts
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'contracts' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('contracts', NEW.account_id, NEW.live_mode, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER contracts_count_delete AFTER DELETE ON contracts
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'contracts' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key = '';
END;

CREATE TRIGGER subscriptions_count_insert AFTER INSERT ON subscriptions
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('subscriptions', NEW.account_id, NEW.live_mode, ''), ('subscriptions', NEW.account_id, NEW.live_mode, NEW.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER subscriptions_count_update AFTER UPDATE OF account_id, live_mode, status ON subscriptions
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'subscriptions' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key IN ('', OLD.status);
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('subscriptions', NEW.account_id, NEW.live_mode, ''), ('subscriptions', NEW.account_id, NEW.live_mode, NEW.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER subscriptions_count_delete AFTER DELETE ON subscriptions
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'subscriptions' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key IN ('', OLD.status);
END;

CREATE TRIGGER terminal_commands_count_insert AFTER INSERT ON terminal_commands
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('terminal_commands', NEW.account_id, NEW.live_mode, ''), ('terminal_commands', NEW.account_id, NEW.live_mode, NEW.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER terminal_commands_count_update AFTER UPDATE OF account_id, live_mode, status ON terminal_commands
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'terminal_commands' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key IN ('', OLD.status);
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('terminal_commands', NEW.account_id, NEW.live_mode, ''), ('terminal_commands', NEW.account_id, NEW.live_mode, NEW.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER terminal_commands_count_delete AFTER DELETE ON terminal_commands
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'terminal_commands' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key IN ('', OLD.status);
END;

-- GET /webhook_endpoints/{id}/deliveries: counted per endpoint (its id in account_id, live_mode 0).
CREATE TRIGGER webhook_deliveries_count_insert AFTER INSERT ON webhook_deliveries
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('webhook_deliveries', NEW.endpoint_id, 0, '')
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER webhook_deliveries_count_delete AFTER DELETE ON webhook_deliveries
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'webhook_deliveries' AND account_id = OLD.endpoint_id AND live_mode = 0 AND key = '';
END;
-- GET /transfers and /withdrawals: a sender's transfers per kind (the list's total is their sum),
-- withdrawals also per status, and, apart, the succeeded peer transfers an account received from
-- another. One counter row per peer transfer on each side: POST /transfers is a hot write.
CREATE TRIGGER transfers_count_insert AFTER INSERT ON transfers
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('transfers', NEW.account_id, NEW.live_mode, NEW.kind)
    ON CONFLICT DO UPDATE SET n = n + 1;
  INSERT INTO list_counts (list, account_id, live_mode, key)
    SELECT 'transfers', NEW.account_id, NEW.live_mode, 'withdrawal/' || NEW.status WHERE NEW.kind = 'withdrawal'
    ON CONFLICT DO UPDATE SET n = n + 1;
  INSERT INTO list_counts (list, account_id, live_mode, key)
    SELECT 'transfers_in', NEW.recipient_account_id, NEW.live_mode, ''
    WHERE NEW.status = 'succeeded' AND NEW.recipient_account_id IS NOT NULL AND NEW.recipient_account_id <> NEW.account_id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER transfers_count_update AFTER UPDATE OF account_id, live_mode, kind, status, recipient_account_id ON transfers
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'transfers' AND account_id = OLD.account_id AND live_mode = OLD.live_mode
    AND (key = OLD.kind OR (OLD.kind = 'withdrawal' AND key = 'withdrawal/' || OLD.status));
  UPDATE list_counts SET n = n - 1 WHERE list = 'transfers_in' AND account_id = OLD.recipient_account_id AND live_mode = OLD.live_mode AND key = ''
    AND OLD.status = 'succeeded' AND OLD.recipient_account_id <> OLD.account_id;
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('transfers', NEW.account_id, NEW.live_mode, NEW.kind)
    ON CONFLICT DO UPDATE SET n = n + 1;
  INSERT INTO list_counts (list, account_id, live_mode, key)
    SELECT 'transfers', NEW.account_id, NEW.live_mode, 'withdrawal/' || NEW.status WHERE NEW.kind = 'withdrawal'
    ON CONFLICT DO UPDATE SET n = n + 1;
  INSERT INTO list_counts (list, account_id, live_mode, key)
    SELECT 'transfers_in', NEW.recipient_account_id, NEW.live_mode, ''
    WHERE NEW.status = 'succeeded' AND NEW.recipient_account_id IS NOT NULL AND NEW.recipient_account_id <> NEW.account_id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER transfers_count_delete AFTER DELETE ON transfers
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'transfers' AND account_id = OLD.account_id AND live_mode = OLD.live_mode
    AND (key = OLD.kind OR (OLD.kind = 'withdrawal' AND key = 'withdrawal/' || OLD.status));
  UPDATE list_counts SET n = n - 1 WHERE list = 'transfers_in' AND account_id = OLD.recipient_account_id AND live_mode = OLD.live_mode AND key = ''
    AND OLD.status = 'succeeded' AND OLD.recipient_account_id <> OLD.account_id;
END;
CREATE TRIGGER sched_bookings_count_insert AFTER INSERT ON sched_bookings
BEGIN
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('bookings', NEW.account_id, NEW.live_mode, ''), ('bookings', NEW.account_id, NEW.live_mode, NEW.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER sched_bookings_count_update AFTER UPDATE OF account_id, live_mode, status ON sched_bookings
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'bookings' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key IN ('', OLD.status);
  INSERT INTO list_counts (list, account_id, live_mode, key) VALUES ('bookings', NEW.account_id, NEW.live_mode, ''), ('bookings', NEW.account_id, NEW.live_mode, NEW.status)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER sched_bookings_count_delete AFTER DELETE ON sched_bookings
BEGIN
  UPDATE list_counts SET n = n - 1 WHERE list = 'bookings' AND account_id = OLD.account_id AND live_mode = OLD.live_mode AND key IN ('', OLD.status);
END;

