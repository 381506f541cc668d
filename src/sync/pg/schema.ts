import type pg from 'pg';
import { CENTRAL_LOG_SCHEMA } from './central-log.js';

/**
 * The sync tables on PostgreSQL (docs/central.md, "Sync tables on PostgreSQL"; design section 4.3):
 * what the stateless front processes read and write, and what the core's projector reads and
 * publishes to. Only sync's own tables: the domain stays in the core's SQLite file.
 *
 * Choices beside the design's sketch:
 * - `created_at` of records and feed rows is text, exactly as the box sent it (the record hash covers
 *   that text, and the feed hands it back as it was written); server-side times are timestamptz.
 * - Outcomes are today's (applied, rejected, held, parked, skipped) plus `received` (not projected
 *   yet); `reason`, `decided_at` and `note` as in the SQLite `sync_received`.
 * - The per-outcome counters of `sync_stores` are kept by `markApplied` (src/sync/pg/projector.ts)
 *   in the statement that changes the outcomes, not by triggers.
 * - `sync_organizations` (id, name, created_at) beside `sync_accounts`: bootstrap answers the
 *   organization's name.
 *
 * Idempotent: every statement is `IF NOT EXISTS`, so `migrate` runs at every start of a front or
 * core. Before the first release the tables change here in place (no numbered migrations), as
 * src/db/baseline.sql does.
 */
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS sync_stores (
  store_id text PRIMARY KEY,
  account_id text NOT NULL,
  live_mode boolean NOT NULL,
  received_seq bigint NOT NULL DEFAULT 0,
  applied_seq bigint NOT NULL DEFAULT 0,
  held_count integer NOT NULL DEFAULT 0,
  rejected_count integer NOT NULL DEFAULT 0,
  parked_count integer NOT NULL DEFAULT 0,
  skipped_count integer NOT NULL DEFAULT 0,
  last_push_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- What the box said it still held after its last push (records, the oldest one's created_at, as sent).
  box_waiting integer,
  box_waiting_since text,
  -- The box's time zone as its last push named it (NULL: never named, the UTC day): its day totals' days are this zone's.
  zone text
);
ALTER TABLE sync_stores ADD COLUMN IF NOT EXISTS zone text;
CREATE INDEX IF NOT EXISTS sync_stores_behind ON sync_stores (store_id) WHERE received_seq > applied_seq;

CREATE TABLE IF NOT EXISTS sync_received (
  store_id text NOT NULL,
  seq bigint NOT NULL,
  id text NOT NULL,
  account_id text NOT NULL,
  live_mode boolean NOT NULL,
  kind text NOT NULL,
  hash bytea NOT NULL,
  payload text NOT NULL,
  created_at text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  outcome text NOT NULL DEFAULT 'received'
    CHECK (outcome IN ('received', 'applied', 'rejected', 'held', 'parked', 'skipped')),
  reason text,
  decided_at timestamptz,
  note text,
  PRIMARY KEY (store_id, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS sync_received_id ON sync_received (id);
CREATE INDEX IF NOT EXISTS sync_received_pending ON sync_received (store_id, seq) WHERE outcome IN ('received', 'held');
CREATE INDEX IF NOT EXISTS sync_received_parked ON sync_received (store_id, seq) WHERE outcome = 'parked';

CREATE TABLE IF NOT EXISTS sync_feed (
  position bigint PRIMARY KEY,
  organization_id text NOT NULL,
  account_id text,
  live_mode boolean NOT NULL,
  kind text NOT NULL,
  object_id text,
  payload text NOT NULL,
  created_at text NOT NULL,
  origin_store_id text,
  to_store_id text
);
CREATE INDEX IF NOT EXISTS sync_feed_account ON sync_feed (account_id, position);
CREATE INDEX IF NOT EXISTS sync_feed_org ON sync_feed (organization_id, position) WHERE account_id IS NULL;

CREATE TABLE IF NOT EXISTS sync_day_totals (
  store_id text NOT NULL,
  account_id text NOT NULL,
  live_mode boolean NOT NULL,
  day date NOT NULL,
  currency text NOT NULL,
  measure text NOT NULL,
  count bigint NOT NULL,
  sum bigint NOT NULL,
  PRIMARY KEY (store_id, account_id, live_mode, day, currency, measure)
);

CREATE TABLE IF NOT EXISTS sync_organizations (
  id text PRIMARY KEY,
  name text NOT NULL,
  created_at text NOT NULL
);

CREATE TABLE IF NOT EXISTS sync_accounts (
  id text PRIMARY KEY,
  organization_id text NOT NULL,
  live_mode boolean NOT NULL,
  name text NOT NULL,
  sandbox_of text,
  parent_account_id text,
  tax_id text,
  tax_name text,
  country text NOT NULL,
  default_currency text NOT NULL,
  event_format text NOT NULL,
  created_at text NOT NULL,
  -- The account's currencies (JSON array), for the fronts' receipt checks.
  currencies text
);
ALTER TABLE sync_accounts ADD COLUMN IF NOT EXISTS currencies text;
CREATE INDEX IF NOT EXISTS sync_accounts_parent ON sync_accounts (parent_account_id);
CREATE INDEX IF NOT EXISTS sync_accounts_sandbox ON sync_accounts (sandbox_of);

CREATE TABLE IF NOT EXISTS sync_keys (
  id text PRIMARY KEY,
  prefix text NOT NULL UNIQUE,
  hash text NOT NULL UNIQUE,
  kind text NOT NULL CHECK (kind IN ('account', 'organization')),
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  account_id text,
  organization_id text NOT NULL,
  live_mode boolean NOT NULL,
  created_at text NOT NULL,
  revoked_at text
);
CREATE INDEX IF NOT EXISTS sync_keys_org ON sync_keys (organization_id);
`;

/** The tables this adapter reads and writes, for a test's or an operator's inspection. */
export const SYNC_TABLES = [
  'sync_stores',
  'sync_received',
  'sync_feed',
  'sync_day_totals',
  'sync_organizations',
  'sync_accounts',
  'sync_keys',
  'central_lease',
  'central_log',
  'central_cores',
] as const;

/**
 * Creates the sync tables if missing. Serialised by a transaction-scoped advisory lock, so fronts
 * and the core starting together do not race on `CREATE ... IF NOT EXISTS` (which is not safe
 * against a concurrent creator of the same name).
 */
export async function migrate(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtext('posd-sync-migrate'))");
    await client.query(SCHEMA);
    await client.query(CENTRAL_LOG_SCHEMA);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
