import type pg from 'pg';
import type { SummaryRow } from '../shared/wire.js';
import { inTransaction } from './pool.js';

/**
 * The channel a front rings after each receipt commits, with the store id as payload
 * (`SELECT pg_notify('posd_received', <store_id>)`): the core's ingest looks at that store at once.
 * Fixed by agreement between the fronts and the core (docs/central.md).
 */
export const RECEIVED_CHANNEL = 'posd_received';

/** A store as PostgreSQL has it, for the core's ingest and report (one row per box). */
export interface PgStoreRow {
  store_id: string;
  account_id: string;
  live_mode: boolean;
  received_seq: number;
  applied_seq: number;
  held_count: number;
  rejected_count: number;
  parked_count: number;
  skipped_count: number;
  /** What the box said it still held after its last push (the stores panel). */
  box_waiting: number | null;
  box_waiting_since: string | null;
  /** The box's zone as its pushes named it (null: UTC): the days of its `sync_day_totals`. */
  zone: string | null;
}

const STORE_COLUMNS =
  'store_id, account_id, live_mode, received_seq, applied_seq, held_count, rejected_count, parked_count, skipped_count, box_waiting, box_waiting_since, zone';

/** Every store (a row per box): the core compares them with its SQLite when it takes the lease. */
export async function allStores(pool: pg.Pool): Promise<PgStoreRow[]> {
  return (await pool.query<PgStoreRow>(`SELECT ${STORE_COLUMNS} FROM sync_stores ORDER BY store_id`)).rows;
}

/** Stores with records received and not reported applied (the partial index `sync_stores_behind`). */
export async function behindStores(pool: pg.Pool, limit = 1000): Promise<PgStoreRow[]> {
  return (await pool.query<PgStoreRow>(`SELECT ${STORE_COLUMNS} FROM sync_stores WHERE received_seq > applied_seq ORDER BY store_id LIMIT $1`, [limit])).rows;
}

export async function storeOf(pool: pg.Pool, storeId: string): Promise<PgStoreRow | undefined> {
  return (await pool.query<PgStoreRow>(`SELECT ${STORE_COLUMNS} FROM sync_stores WHERE store_id = $1`, [storeId])).rows[0];
}

/** Records PostgreSQL has as held or parked for one store (its partial indexes): what an operator's retry or skip may change. */
export async function undecidedSeqs(pool: pg.Pool, storeId: string): Promise<number[]> {
  const res = await pool.query<{ seq: number }>(
    "SELECT seq FROM sync_received WHERE store_id = $1 AND outcome = 'held' UNION SELECT seq FROM sync_received WHERE store_id = $1 AND outcome = 'parked'",
    [storeId],
  );
  return res.rows.map((r) => r.seq);
}

/**
 * How far the projector is behind the fronts, over every store and per store behind: records
 * received and not applied, and for how long: the age of each store's oldest record not applied
 * yet (PostgreSQL's `now()` minus the front's receipt time; by the `(store_id, seq)` key, one row
 * per store behind).
 */
export async function projectorLag(
  pool: pg.Pool,
): Promise<{ records: number; stores: number; perStore: Map<string, number>; secondsPerStore: Map<string, number> }> {
  const res = await pool.query<{ store_id: string; lag: string; seconds: number | null }>(
    `SELECT s.store_id, s.received_seq - s.applied_seq AS lag,
       EXTRACT(EPOCH FROM now() - (SELECT r.received_at FROM sync_received r WHERE r.store_id = s.store_id AND r.seq > s.applied_seq ORDER BY r.seq LIMIT 1))::float8 AS seconds
     FROM sync_stores s WHERE s.received_seq > s.applied_seq`,
  );
  const perStore = new Map(res.rows.map((r) => [r.store_id, Number(r.lag)]));
  const secondsPerStore = new Map(res.rows.map((r) => [r.store_id, Math.max(0, r.seconds ?? 0)]));
  return { records: [...perStore.values()].reduce((a, b) => a + b, 0), stores: perStore.size, perStore, secondsPerStore };
}

/** The transaction advisory lock a relay batch holds shared, and a new leader exclusively while it reads the feed's end. */
const RELAY_LOCK = 'posd-feed-relay';

/**
 * The feed's highest position in PostgreSQL (0: none), read by a core that just took the lease:
 * under the relay lock held exclusively, so a batch of the previous leader's relay still in flight
 * commits first (and is counted), and any later one finds the lease gone (`relayGuard`).
 */
export async function feedMaxPosition(pool: pg.Pool): Promise<number> {
  return inTransaction(pool, async (c) => {
    await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [RELAY_LOCK]);
    return (await c.query<{ m: number }>('SELECT coalesce(max(position), 0) AS m FROM sync_feed')).rows[0].m;
  });
}

/**
 * The relay's check inside each batch (FeedRelay's `guard`): the relay lock shared, then the lease
 * session (`leasePid`) must still hold its advisory lock, else the batch is rolled back. A relay
 * outliving its core's leadership (a lease session cut while the process runs) never inserts rows
 * at positions the new leader hands out.
 */
export function relayGuard(leasePid: number): (c: pg.PoolClient) => Promise<void> {
  return async (c) => {
    await c.query('SELECT pg_advisory_xact_lock_shared(hashtext($1))', [RELAY_LOCK]);
    const held = await c.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1 LIMIT 1", [leasePid]);
    if (!held.rows.length) throw new Error('the projector lease is gone: this core no longer relays its feed');
  };
}

/**
 * The central's own measures of one store's days (`ledger.*`, `intents.*`, `events`), replacing what
 * was there for those days; the fronts' `records.<kind>` rows are left alone. Each call carries
 * every row of the days it names (a recomputation, not an increment), so a repeat changes nothing.
 */
export async function publishDayTotals(
  pool: pg.Pool,
  storeId: string,
  days: readonly string[],
  rows: ReadonlyArray<SummaryRow & { day: string }>,
): Promise<void> {
  if (!days.length) return;
  await inTransaction(pool, async (c) => {
    await c.query("DELETE FROM sync_day_totals WHERE store_id = $1 AND day = ANY($2::date[]) AND measure NOT LIKE 'records.%'", [storeId, days]);
    if (!rows.length) return;
    await c.query(
      `INSERT INTO sync_day_totals (store_id, account_id, live_mode, day, currency, measure, count, sum)
       SELECT $1, t.* FROM unnest($2::text[], $3::boolean[], $4::date[], $5::text[], $6::text[], $7::bigint[], $8::bigint[])
         AS t(account_id, live_mode, day, currency, measure, count, sum)
       ON CONFLICT (store_id, account_id, live_mode, day, currency, measure) DO UPDATE SET count = excluded.count, sum = excluded.sum`,
      [
        storeId,
        rows.map((r) => r.account_id),
        rows.map((r) => r.live_mode),
        rows.map((r) => r.day),
        rows.map((r) => r.currency),
        rows.map((r) => r.measure),
        rows.map((r) => r.count),
        rows.map((r) => r.sum),
      ],
    );
  });
}
