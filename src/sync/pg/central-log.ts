import type pg from 'pg';
import type { SyncPgClient } from './sync-client.js';

/**
 * The central's one log on PostgreSQL (docs/central.md, "One log"): every transaction the leading
 * core commits in its SQLite file is first appended here, as the rows it changed, at the next
 * position, fenced by the lease's epoch. Every core's file is a replay of this log; a standby
 * follows it continuously; a core restored from any backup of a core replays what follows its
 * position. Tables made by `migrate` (schema.ts).
 */
export const CENTRAL_LOG_SCHEMA = `
CREATE TABLE IF NOT EXISTS central_lease (
  id integer PRIMARY KEY CHECK (id = 1),
  -- Moved by each core that takes the projector lease: the fence of every append.
  epoch bigint NOT NULL DEFAULT 0,
  -- The leading core's address (what a standby names in its 503), and since when it leads.
  leader text,
  since timestamptz
);
INSERT INTO central_lease (id) VALUES (1) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS central_log (
  position bigint PRIMARY KEY,
  epoch bigint NOT NULL,
  -- A JSON array of row changes, one per key ([table, key, row or null], or [table, key, columns, 1]: src/db/change-shapes.ts).
  changes text NOT NULL,
  count integer NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);
-- The entry's id as the leader made it (null: a snapshot or a tool's): how a leader that lost an
-- append's answer, or crashed with entries not appended, knows its own entry at a position.
ALTER TABLE central_log ADD COLUMN IF NOT EXISTS id text;
CREATE TABLE IF NOT EXISTS central_cores (
  name text PRIMARY KEY,
  role text NOT NULL,
  position bigint NOT NULL,
  seen_at timestamptz NOT NULL DEFAULT now()
);
`;

/** A log entry as a follower reads it. */
export interface LogEntry {
  position: number;
  changes: string;
}

/**
 * Appends one entry at `position`, only while `epoch` is the lease's (a FOR SHARE read of the lease
 * row: a core taking over moves the epoch after every append in flight has committed, and every
 * later one finds it moved). One statement, one round trip. Returns false when fenced (another
 * core leads); throws on a taken position (this core's own earlier append whose answer it never
 * got) or a failure (then the outcome is unknown: the caller re-reads the log before appending).
 */
export function appendEntry(client: SyncPgClient, position: number, epoch: number, changes: string, count: number, timeoutMs: number): boolean {
  const rows = client.query<{ position: number }>(
    `WITH lease AS (SELECT epoch FROM central_lease WHERE id = 1 AND epoch = $2 FOR SHARE)
     INSERT INTO central_log (position, epoch, changes, count) SELECT $1, lease.epoch, $3, $4 FROM lease RETURNING position`,
    [position, epoch, changes, count],
    timeoutMs,
  );
  return rows.length === 1;
}

/**
 * Appends entries (contiguous, in order) in one statement, one round trip, only while `epoch` is
 * the lease's (as `appendEntry`). Returns false when fenced; throws on a failure or a taken
 * position (the outcome then unknown: the caller reads the ids at those positions).
 */
export async function appendEntries(
  pool: pg.Pool,
  epoch: number,
  entries: ReadonlyArray<{ position: number; id: string; changes: string; count: number }>,
): Promise<boolean> {
  // One row of parameters per entry: each text goes as it is (an array parameter would be
  // escaped into an array literal and parsed back: about a third slower, measured).
  const params: unknown[] = [epoch];
  const rows = entries.map((e) => {
    const k = params.push(e.position, e.id, e.changes, e.count) - 4;
    return `($${k + 1}::bigint, $${k + 2}::text, $${k + 3}::text, $${k + 4}::int)`;
  });
  const res = await pool.query(
    `WITH lease AS (SELECT epoch FROM central_lease WHERE id = 1 AND epoch = $1 FOR SHARE)
     INSERT INTO central_log (position, epoch, id, changes, count)
     SELECT e.position, lease.epoch, e.id, e.changes, e.count FROM lease, (VALUES ${rows.join(', ')}) AS e(position, id, changes, count)`,
    params,
  );
  return res.rowCount === entries.length;
}

/** The ids of the log's entries from `from` through `to` (a position absent: not in the map). */
export async function entryIdsBetween(pool: pg.Pool, from: number, to: number): Promise<Map<number, string | null>> {
  const res = await pool.query<{ position: string; id: string | null }>('SELECT position, id FROM central_log WHERE position BETWEEN $1 AND $2', [from, to]);
  return new Map(res.rows.map((r) => [Number(r.position), r.id]));
}

/** The same, synchronously (a tool in its own process). */
export function entryIdsSync(client: SyncPgClient, from: number, to: number, timeoutMs: number): Map<number, string | null> {
  const rows = client.query<{ position: string; id: string | null }>(
    'SELECT position, id FROM central_log WHERE position BETWEEN $1 AND $2',
    [from, to],
    timeoutMs,
  );
  return new Map(rows.map((r) => [Number(r.position), r.id]));
}

/** Entries after `position`, in order, at most `limit`. */
export async function entriesAfter(pool: pg.Pool, position: number, limit: number): Promise<LogEntry[]> {
  const res = await pool.query<LogEntry>('SELECT position, changes FROM central_log WHERE position > $1 ORDER BY position LIMIT $2', [position, limit]);
  return res.rows.map((r) => ({ position: Number(r.position), changes: r.changes }));
}

/** The same, synchronously (a leader repairing its place in the log from inside a transaction). */
export function entriesAfterSync(client: SyncPgClient, position: number, limit: number, timeoutMs: number): LogEntry[] {
  return client
    .query<LogEntry>('SELECT position, changes FROM central_log WHERE position > $1 ORDER BY position LIMIT $2', [position, limit], timeoutMs)
    .map((r) => ({ position: Number(r.position), changes: r.changes }));
}

/** The log's last position (0: empty). */
export async function logEnd(pool: pg.Pool): Promise<number> {
  return Number((await pool.query<{ m: string }>('SELECT coalesce(max(position), 0) AS m FROM central_log')).rows[0].m);
}

/**
 * Moves the epoch for a core that just took the lease, naming it the leader. Waits for the appends
 * in flight under the old epoch (their FOR SHARE lock) to commit: the log's end read after this is
 * final for the old leader.
 */
export async function takeEpoch(pool: pg.Pool, leader: string): Promise<number> {
  const res = await pool.query<{ epoch: string }>('UPDATE central_lease SET epoch = epoch + 1, leader = $1, since = now() WHERE id = 1 RETURNING epoch', [
    leader,
  ]);
  return Number(res.rows[0].epoch);
}

/** The leading core's address as it wrote it when it took the lease (null before any). */
export async function leaderOf(pool: pg.Pool): Promise<string | null> {
  return (await pool.query<{ leader: string | null }>('SELECT leader FROM central_lease WHERE id = 1')).rows[0]?.leader ?? null;
}

/** Where a core stands in the log (the leader's figure beside its standbys', for their lag). */
export async function reportCore(pool: pg.Pool, name: string, role: string, position: number): Promise<void> {
  await pool.query(
    `INSERT INTO central_cores (name, role, position, seen_at) VALUES ($1, $2, $3, now())
     ON CONFLICT (name) DO UPDATE SET role = excluded.role, position = excluded.position, seen_at = now()`,
    [name, role, position],
  );
}

/**
 * For a tool in its own process (src/sync/central/central-log-cli.ts), synchronously: takes the
 * projector lease on the client's session if free (it is held until that session ends) and, when
 * taken, moves the epoch naming `leader`. Returns the new epoch, or the leader's name when another
 * session holds the lease.
 */
export function takeLeaseSync(client: SyncPgClient, lock: string, leader: string, timeoutMs: number): { epoch: number } | { leader: string | null } {
  const [got] = client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [lock], timeoutMs);
  if (!got.ok) {
    const [row] = client.query<{ leader: string | null }>('SELECT leader FROM central_lease WHERE id = 1', [], timeoutMs);
    return { leader: row?.leader ?? null };
  }
  const [row] = client.query<{ epoch: string }>(
    'UPDATE central_lease SET epoch = epoch + 1, leader = $1, since = now() WHERE id = 1 RETURNING epoch',
    [leader],
    timeoutMs,
  );
  return { epoch: Number(row.epoch) };
}

/** The log's last position, synchronously (0: empty). */
export function logEndSync(client: SyncPgClient, timeoutMs: number): number {
  return Number(client.query<{ m: string }>('SELECT coalesce(max(position), 0) AS m FROM central_log', [], timeoutMs)[0].m);
}
