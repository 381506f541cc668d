import type pg from 'pg';
import { createClient } from './pool.js';

/** A received record as the projector reads it back: the box's record, as pushed, with its stored hash. */
export interface ReceivedRecordRow {
  store_id: string;
  seq: number;
  id: string;
  account_id: string;
  live_mode: boolean;
  kind: string;
  /** sha-256 hex, as `recordHash` gives it. */
  hash: string;
  /** The payload's JSON text as received (the hash covers it). */
  payload: string;
  created_at: string;
  /** When a front received it (ISO 8601, UTC, milliseconds), as the SQLite central writes its own. */
  received_at: string;
  outcome: ProjectedOutcome | 'received';
  /** Why, when a front refused it at receipt (`rejected`) or the core decided it. */
  reason: string | null;
}

export type ProjectedOutcome = 'applied' | 'rejected' | 'held' | 'parked' | 'skipped';

/** The projector's decision about one record, written back after the core's SQLite commit. */
export interface OutcomeOf {
  seq: number;
  outcome: ProjectedOutcome;
  reason?: string | null;
}

/**
 * One store's received records after `afterSeq` (the projector's cursor, kept in the core's SQLite),
 * in the store's order, by the (store_id, seq) key.
 */
export async function readReceived(pool: pg.Pool, storeId: string, afterSeq: number, limit: number): Promise<ReceivedRecordRow[]> {
  const res = await pool.query<ReceivedRecordRow>(
    `SELECT store_id, seq, id, account_id, live_mode, kind, encode(hash, 'hex') AS hash, payload, created_at,
       to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS received_at, outcome, reason
     FROM sync_received WHERE store_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [storeId, afterSeq, limit],
  );
  return res.rows;
}

/** Stores with received records past what the projector reported applied (a partial index read). */
export async function storesBehind(pool: pg.Pool, limit = 1000): Promise<Array<{ store_id: string; applied_seq: number; received_seq: number }>> {
  const res = await pool.query<{ store_id: string; applied_seq: number; received_seq: number }>(
    'SELECT store_id, applied_seq, received_seq FROM sync_stores WHERE received_seq > applied_seq ORDER BY store_id LIMIT $1',
    [limit],
  );
  return res.rows;
}

/**
 * Publishes what the projector applied for one store, after its SQLite commit (design 4.4,
 * "Projection"): the records' outcomes and `applied_seq = GREATEST(applied_seq, seq)`, with the
 * store's per-outcome counters moved by the outcomes that changed, all in one statement. A crash
 * between the core's commit and this call only repeats it: an outcome already written changes no
 * counter, and `applied_seq` never moves back.
 */
export async function markApplied(pool: pg.Pool, storeId: string, seq: number, outcomes: readonly OutcomeOf[]): Promise<void> {
  await pool.query(
    `WITH o AS (
       SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[]) AS o(seq, outcome, reason)
     ), changed AS (
       UPDATE sync_received r
       SET outcome = o.outcome, reason = o.reason, decided_at = CASE WHEN o.outcome IN ('parked', 'skipped') THEN now() END
       FROM o JOIN sync_received prev ON prev.store_id = $1 AND prev.seq = o.seq
       WHERE r.store_id = $1 AND r.seq = o.seq AND r.outcome IS DISTINCT FROM o.outcome
       RETURNING prev.outcome AS was, r.outcome AS now
     ), d AS (
       SELECT count(*) FILTER (WHERE now = 'held') - count(*) FILTER (WHERE was = 'held') AS held,
              count(*) FILTER (WHERE now = 'rejected') - count(*) FILTER (WHERE was = 'rejected') AS rejected,
              count(*) FILTER (WHERE now = 'parked') - count(*) FILTER (WHERE was = 'parked') AS parked,
              count(*) FILTER (WHERE now = 'skipped') - count(*) FILTER (WHERE was = 'skipped') AS skipped
       FROM changed
     )
     UPDATE sync_stores s SET applied_seq = GREATEST(s.applied_seq, $5),
       held_count = s.held_count + d.held, rejected_count = s.rejected_count + d.rejected,
       parked_count = s.parked_count + d.parked, skipped_count = s.skipped_count + d.skipped
     FROM d WHERE s.store_id = $1`,
    [storeId, outcomes.map((o) => o.seq), outcomes.map((o) => o.outcome), outcomes.map((o) => o.reason ?? null), seq],
  );
}

/** The session advisory lock of the one projector (design 4.4): `hashtext('posd-projector')`. */
export const PROJECTOR_LOCK = 'posd-projector';

/**
 * Leadership of the projector (and the feed relay, which runs beside it): a session advisory lock
 * on a dedicated connection. Whoever holds the lock projects; when its connection dies (process
 * killed, network cut, server restart) PostgreSQL drops the lock, and a standby core waiting in
 * `acquire` gets it. The lock is never taken on a pooled connection: a pool could hand that session
 * to other work or close it while idle.
 */
export class ProjectorLease {
  private client: pg.Client | null = null;
  private lost: (err: Error) => void = () => undefined;
  /** Settles when the session holding (or waiting for) the lock ends: leadership is gone. */
  readonly ended: Promise<Error>;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly name = PROJECTOR_LOCK,
  ) {
    this.ended = new Promise((resolve) => {
      this.lost = resolve;
    });
  }

  private async session(): Promise<pg.Client> {
    if (this.client) return this.client;
    const client = createClient({ ...this.config, application_name: 'posd-projector-lease', keepAlive: true });
    const end = (err?: Error) => this.lost(err ?? new Error('the projector lease connection ended'));
    client.on('error', end);
    client.on('end', () => end());
    await client.connect();
    this.client = client;
    return client;
  }

  /** Takes the lock if free; false while another session holds it. */
  async tryAcquire(): Promise<boolean> {
    const c = await this.session();
    const res = await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [this.name]);
    return res.rows[0].ok;
  }

  /** Waits (inside PostgreSQL, no polling) until the lock is free, then holds it: a standby's wait. */
  async acquire(): Promise<void> {
    const c = await this.session();
    await c.query('SELECT pg_advisory_lock(hashtext($1))', [this.name]);
  }

  /** The backend pid of the lease's session (for an operator's `pg_terminate_backend`, and tests). */
  async pid(): Promise<number> {
    const c = await this.session();
    return (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  }

  /** Gives the lock up by closing its session. */
  async release(): Promise<void> {
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => undefined);
  }
}
