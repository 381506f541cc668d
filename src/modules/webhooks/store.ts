import type { Db } from '../../db/database.js';
import { listCount } from '../../db/list-counts.js';
import { DeliveryIds } from './delivery-ids.js';
import { preparedOnUse } from '../../db/statements.js';

/** All SQL of the webhooks module. */

export interface EndpointRow {
  id: string;
  account_id: string;
  live_mode: number;
  url: string;
  description: string | null;
  secret: string;
  disabled: number;
  disabled_reason: string | null;
  from_seq: number;
  /** JSON array of the event types it receives; null: all. */
  filter_types: string | null;
  previous_secret: string | null;
  previous_secret_expires_ms: number | null;
  failing_since_ms: number | null;
  failing_noticed: number;
  disabled_at_ms: number | null;
  disabled_seq: number | null;
  /** Messages per second at most; null: no limit. */
  rate_limit: number | null;
  /** Attempts in flight at most; null: no cap below `webhooks.concurrency`. */
  max_in_flight: number | null;
  /** 1: first-in-first-out delivery (one at a time, in creation order). */
  fifo: number;
  /** JSON object of strings (hosted section 13). */
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface DeliveryRow {
  /** The rowid, in creation order: the worker's key (the `id` is the API's). */
  seq: number;
  /** Filled in by the store's readers (stored, or derived from seq: delivery-ids.ts). */
  id: string;
  account_id: string;
  live_mode: number;
  endpoint_id: string;
  event_id: string;
  /** `events.seq` of the event delivered; null for test sends. */
  event_seq: number | null;
  event_type: string;
  event_account_id: string;
  payload: string | null;
  status: 'pending' | 'succeeded' | 'failed' | 'canceled';
  attempts: number;
  auto_attempts: number;
  next_attempt_ms: number | null;
  last_response_code: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  /** 1: in its endpoint's first-in-first-out order (parked while `next_attempt_ms` is null). */
  fifo: number;
}

export interface AttemptRow {
  delivery_seq: number;
  attempt: number;
  account_id: string;
  live_mode: number;
  manual: number;
  webhook_timestamp: number;
  attempted_at: string;
  duration_ms: number;
  response_code: number | null;
  error: string | null;
}

/**
 * What one attempt needs of the delivery and the event it carries, and whether it may be sent now.
 * The endpoint's URL and secret never change (an endpoint's `PATCH` changes only its description
 * and `disabled`): the worker reads them once per endpoint.
 */
export interface SendableRow
  extends Pick<DeliveryRow, 'seq' | 'account_id' | 'endpoint_id' | 'event_id' | 'event_type' | 'event_account_id' | 'payload' | 'status' | 'next_attempt_ms'> {
  endpoint_disabled: number;
  /** The event's payload (null for test sends, whose payload is on the delivery). */
  event_payload: string | null;
}

/** What the fan-out plans from: the rows take the event's id and type from the events table. */
export interface EventRowLite {
  seq: number;
  account_id: string;
  live_mode: number;
  /** For the endpoints' `filter_types`. */
  type: string;
}

export interface ReplayRow {
  id: string;
  endpoint_id: string;
  first_seq: number | null;
  last_seq: number | null;
  total: number;
  filters: string;
  created_at: string;
}

/** Which of an endpoint's deliveries a bulk replay sends again (docs/webhooks.md). */
export interface ReplayFilter {
  /** ISO times; the delivery's `created_at` (when the event was fanned out to it) in [since, until). */
  since: string;
  until: string;
  /** Null: any. */
  event_types: string[] | null;
  statuses: Array<DeliveryRow['status']> | null;
}

// Only what an attempt reads: the rows are read for every attempt, and each column is a copy.
const SENDABLE = `d.seq, d.account_id, d.endpoint_id, d.event_id, d.event_type, d.event_account_id, d.payload, d.status,
  d.next_attempt_ms, w.disabled AS endpoint_disabled, e.payload AS event_payload`;

/**
 * The delivery worker's routine writes, run by its writer (writer.ts: on a thread with its own
 * connection, or inline), always with named parameters.
 */
export const WRITE_SQL = {
  // Only for an endpoint still there and enabled: the fan-out is planned before it is written. One
  // delivery per (endpoint, event) without a UNIQUE index (docs/webhooks.md): the cursor moves in the
  // same transaction as the rows it covers, so an event at or before it has its rows already, and
  // a batch planned twice (a fan-out redone) is written once. `id` is null but for test sends.
  insertDelivery: `INSERT INTO webhook_deliveries (id, account_id, live_mode, endpoint_id, event_id, event_seq, event_type, event_account_id, payload,
       status, attempts, auto_attempts, next_attempt_ms, created_at, updated_at)
     SELECT @id, @account_id, @live_mode, @endpoint_id, @event_id, @event_seq, @event_type, @event_account_id, @payload,
       'pending', 0, 0, @next_attempt_ms, @created_at, @created_at
     FROM webhook_endpoints WHERE id = @endpoint_id AND disabled = 0
       AND (@event_seq IS NULL OR @event_seq > (SELECT seq FROM webhook_cursor WHERE id = 1))`,
  // A fan-out batch in one statement (`rows`: a JSON array of [events.seq, endpoint id], in the
  // order the rows are to be numbered): per row, a statement costs about 14 µs of binding and
  // lookups, this about 3 µs. The event's columns come from its row; the same conditions as above.
  insertDeliveries: `INSERT INTO webhook_deliveries (id, account_id, live_mode, endpoint_id, event_id, event_seq, event_type, event_account_id, payload,
       status, attempts, auto_attempts, next_attempt_ms, created_at, updated_at, fifo)
     SELECT NULL, w.account_id, w.live_mode, w.id, e.id, e.seq, e.type, e.account_id, NULL,
       'pending', 0, 0, IIF(w.fifo = 1, NULL, @next_attempt_ms), @created_at, @created_at, w.fifo
     FROM json_each(@rows) j
     JOIN events e ON e.seq = j.value ->> 0
     JOIN webhook_endpoints w ON w.id = j.value ->> 1 AND w.disabled = 0
     WHERE e.seq > (SELECT seq FROM webhook_cursor WHERE id = 1)
     ORDER BY j.key`,
  // A first-in-first-out endpoint (fifo = 1) gets its rows parked (no schedule) above; this gives
  // the oldest parked one a schedule (due now) when the endpoint has no head (a pending one with a
  // schedule): after a fan-out, after its head succeeded or was given up, after a replay. Guarded,
  // so running it when a head exists changes nothing; both reads are on webhook_deliveries_fifo.
  promoteNext: `UPDATE webhook_deliveries SET next_attempt_ms = @now_ms
     WHERE seq = (SELECT seq FROM webhook_deliveries
         WHERE endpoint_id = @id AND status = 'pending' AND fifo = 1 AND next_attempt_ms IS NULL ORDER BY seq LIMIT 1)
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries
         WHERE endpoint_id = @id AND status = 'pending' AND fifo = 1 AND next_attempt_ms IS NOT NULL)
       AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = @id AND fifo = 1 AND disabled = 0)`,
  // Never backwards: a fan-out redone after a crash may end before one already recorded.
  advanceCursor: 'UPDATE webhook_cursor SET seq = MAX(seq, @seq) WHERE id = 1',
  // A success ends the endpoint's failing streak (written only for endpoints known to be failing).
  clearFailing: 'UPDATE webhook_endpoints SET failing_since_ms = NULL, failing_noticed = 0 WHERE id = @id',
  // A 2xx settles the delivery whatever happened meanwhile, from any state (the one unguarded move
  // of a bookkeeping flag, docs/architecture.md): its attempt row takes the new count.
  markSucceeded: `UPDATE webhook_deliveries SET status = 'succeeded', attempts = attempts + 1, auto_attempts = auto_attempts + @auto,
       next_attempt_ms = NULL, last_response_code = @response_code, last_error = NULL, updated_at = @updated_at
     WHERE seq = @seq`,
  insertSucceededAttempt: `INSERT INTO webhook_attempts (delivery_seq, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at,
       duration_ms, response_code, error)
     SELECT seq, attempts, account_id, live_mode, @manual, @webhook_timestamp, @attempted_at, @duration_ms, @response_code, NULL
     FROM webhook_deliveries WHERE seq = @seq`,
  // The same for many successes with one response code and kind (`seqs`: a JSON array of distinct
  // seqs; `rows`: [seq, webhook_timestamp, attempted_at, duration_ms] each), two statements a group.
  markSucceededMany: `UPDATE webhook_deliveries SET status = 'succeeded', attempts = attempts + 1, auto_attempts = auto_attempts + @auto,
       next_attempt_ms = NULL, last_response_code = @response_code, last_error = NULL, updated_at = @updated_at
     WHERE seq IN (SELECT value FROM json_each(@seqs))`,
  insertSucceededAttempts: `INSERT INTO webhook_attempts (delivery_seq, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at,
       duration_ms, response_code, error)
     SELECT d.seq, d.attempts, d.account_id, d.live_mode, @manual, j.value ->> 1, j.value ->> 2, j.value ->> 3, @response_code, NULL
     FROM json_each(@rows) j JOIN webhook_deliveries d ON d.seq = j.value ->> 0`,
} as const;
export type WriteStatement = keyof typeof WRITE_SQL;

export function webhooksStore(db: Db) {
  const s = preparedOnUse({
    insertEndpoint: () =>
      db.prepare(
        `INSERT INTO webhook_endpoints (id, account_id, live_mode, url, description, secret, disabled, disabled_reason, from_seq, filter_types,
         metadata, created_at, updated_at)
       VALUES (@id, @account_id, @live_mode, @url, @description, @secret, 0, NULL, @from_seq, @filter_types, @metadata, @created_at, @updated_at)`,
      ),
    endpoint: () => db.prepare('SELECT * FROM webhook_endpoints WHERE id = ?'),
    updateEndpoint: () =>
      db.prepare(
        `UPDATE webhook_endpoints SET description = @description, disabled = @disabled, disabled_reason = @disabled_reason, updated_at = @updated_at
       WHERE id = @id`,
      ),
    deleteEndpoint: () => db.prepare('DELETE FROM webhook_endpoints WHERE id = ?'),
    activeEndpoints: () => db.prepare('SELECT * FROM webhook_endpoints WHERE disabled = 0'),
    maxSeq: () => db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM events'),
    cursor: () => db.prepare('SELECT seq FROM webhook_cursor WHERE id = 1'),
    eventsAfter: () => db.prepare('SELECT seq, account_id, live_mode, type FROM events WHERE seq > ? ORDER BY seq LIMIT ?'),
    eventsBetween: () => db.prepare('SELECT seq, account_id, live_mode, type FROM events WHERE seq > ? AND seq <= ? AND live_mode = ? ORDER BY seq'),
    setFilterTypes: () => db.prepare('UPDATE webhook_endpoints SET filter_types = ?, updated_at = ? WHERE id = ?'),
    setGates: () => db.prepare('UPDATE webhook_endpoints SET rate_limit = ?, max_in_flight = ?, updated_at = ? WHERE id = ?'),
    setFifo: () => db.prepare('UPDATE webhook_endpoints SET fifo = ?, updated_at = ? WHERE id = ?'),
    setMetadata: () => db.prepare('UPDATE webhook_endpoints SET metadata = ?, updated_at = ? WHERE id = ?'),
    fifoIds: () => db.prepare('SELECT id FROM webhook_endpoints WHERE fifo = 1 AND disabled = 0').pluck(),
    // Turning FIFO on: the endpoint's pending deliveries of events join the order, the oldest keeps
    // its schedule (the head), the others are parked. Test sends stay outside the order.
    fifoOn: () =>
      db.prepare(
        `UPDATE webhook_deliveries SET fifo = 1,
         next_attempt_ms = IIF(seq = (SELECT MIN(seq) FROM webhook_deliveries WHERE endpoint_id = @id AND status = 'pending' AND event_seq IS NOT NULL),
           COALESCE(next_attempt_ms, @now_ms), NULL)
       WHERE endpoint_id = @id AND status = 'pending' AND event_seq IS NOT NULL`,
      ),
    // Turning it off: every parked one is due now.
    fifoOff: () =>
      db.prepare(
        `UPDATE webhook_deliveries SET fifo = 0, next_attempt_ms = COALESCE(next_attempt_ms, @now_ms)
       WHERE endpoint_id = @id AND status = 'pending' AND fifo = 1`,
      ),
    promoteNext: () => db.prepare(WRITE_SQL.promoteNext),
    gatedCount: () => db.prepare('SELECT COUNT(*) FROM webhook_endpoints WHERE rate_limit IS NOT NULL OR max_in_flight IS NOT NULL').pluck(),
    // Deliveries a gate held back (gates.ts), to when it should let them through: `rows` is a JSON
    // array of [seq, next_attempt_ms]. Not an attempt: counts and the schedule stay.
    reschedule: () =>
      db.prepare(
        `UPDATE webhook_deliveries SET next_attempt_ms = j.value ->> 1
       FROM json_each(?) j WHERE webhook_deliveries.seq = j.value ->> 0 AND webhook_deliveries.status = 'pending'`,
      ),
    rotateSecret: () =>
      db.prepare(
        `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_ms = @expires_ms, secret = @secret, updated_at = @updated_at
       WHERE id = @id`,
      ),
    markDisabled: () => db.prepare('UPDATE webhook_endpoints SET disabled_at_ms = ?, disabled_seq = ? WHERE id = ?'),
    markFailing: () => db.prepare('UPDATE webhook_endpoints SET failing_since_ms = COALESCE(failing_since_ms, ?) WHERE id = ?'),
    clearFailing: () => db.prepare(WRITE_SQL.clearFailing),
    failingEndpoints: () => db.prepare('SELECT * FROM webhook_endpoints WHERE failing_since_ms IS NOT NULL AND failing_since_ms <= ? AND disabled = 0'),
    failingIds: () => db.prepare('SELECT id FROM webhook_endpoints WHERE failing_since_ms IS NOT NULL').pluck(),
    setNoticed: () => db.prepare('UPDATE webhook_endpoints SET failing_noticed = 1 WHERE id = ?'),
    // One new pending delivery per distinct event among the endpoint's deliveries that match (the
    // event still stored; test sends are not events), in event order; none for an event already
    // pending on the endpoint (it is sent anyway). One pass over the endpoint's rows: the pending
    // list is read once (an uncorrelated IN), the grouping keeps one row per event (the rows of an
    // (endpoint, event) agree on every column copied).
    // On a first-in-first-out endpoint (@fifo = 1) the rows are parked, after its pending ones.
    // A bulk replay reads the endpoint's deliveries in slices along (endpoint_id, seq): an index
    // range each time, so a replay of N deliveries reads each row once.
    replayScan: () =>
      db.prepare(
        `SELECT seq, event_seq, event_type, status, created_at, updated_at FROM webhook_deliveries
       WHERE endpoint_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
      ),
    pendingEventSeqs: () =>
      db.prepare(`SELECT event_seq FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'pending' AND event_seq IS NOT NULL`).pluck(),
    // New deliveries, due now, for the chosen rows' events (deliveries.seq in @seqs), in events order.
    replay: () =>
      db.prepare(
        `INSERT INTO webhook_deliveries (id, account_id, live_mode, endpoint_id, event_id, event_seq, event_type, event_account_id, payload,
         status, attempts, auto_attempts, next_attempt_ms, created_at, updated_at, fifo, replay_id)
       SELECT NULL, d.account_id, d.live_mode, d.endpoint_id, d.event_id, d.event_seq, d.event_type, d.event_account_id, NULL,
         'pending', 0, 0, IIF(@fifo = 1, NULL, @now_ms), @now, @now, @fifo, @replay_id
       FROM json_each(@seqs) j JOIN webhook_deliveries d ON d.seq = j.value
       WHERE EXISTS (SELECT 1 FROM events e WHERE e.seq = d.event_seq)
       ORDER BY d.event_seq`,
      ),
    maxDeliverySeq: () => db.prepare('SELECT COALESCE(MAX(seq), 0) FROM webhook_deliveries').pluck(),
    extendReplay: () =>
      db.prepare(
        `UPDATE webhook_replays SET first_seq = COALESCE(first_seq, @first), last_seq = COALESCE(@last, last_seq), total = total + @total WHERE id = @id`,
      ),
    // Rows for events the endpoint never had (it was disabled): [events.seq, endpoint id] pairs.
    insertCatchUp: () =>
      db.prepare(
        `INSERT INTO webhook_deliveries (id, account_id, live_mode, endpoint_id, event_id, event_seq, event_type, event_account_id, payload,
         status, attempts, auto_attempts, next_attempt_ms, created_at, updated_at, fifo, replay_id)
       SELECT NULL, w.account_id, w.live_mode, w.id, e.id, e.seq, e.type, e.account_id, NULL, 'pending', 0, 0,
         IIF(w.fifo = 1, NULL, @now_ms), @now, @now, w.fifo, @replay_id
       FROM json_each(@rows) j
       JOIN events e ON e.seq = j.value ->> 0
       JOIN webhook_endpoints w ON w.id = j.value ->> 1 AND w.disabled = 0
       ORDER BY j.key`,
      ),
    insertReplay: () =>
      db.prepare(
        `INSERT INTO webhook_replays (id, endpoint_id, first_seq, last_seq, total, filters, created_at)
       VALUES (@id, @endpoint_id, @first_seq, @last_seq, @total, @filters, @created_at)`,
      ),
    replayById: () => db.prepare('SELECT * FROM webhook_replays WHERE id = ?'),
    replayCounts: () =>
      db.prepare(`SELECT status, COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? AND seq BETWEEN ? AND ? AND replay_id = ? GROUP BY status`),
    // Retention: finished deliveries last changed before the cutoff, oldest first (their attempts
    // go with them: ON DELETE CASCADE). Pending ones are kept whatever their age.
    pruneDeliveries: () =>
      db.prepare(
        `DELETE FROM webhook_deliveries WHERE seq IN (
         SELECT seq FROM webhook_deliveries WHERE status != 'pending' AND updated_at < ?
           -- Never the newest row: a new row takes MAX(seq) + 1, and a derived id must not come back.
           AND seq < (SELECT MAX(seq) FROM webhook_deliveries)
         ORDER BY seq LIMIT ?)`,
      ),
    pruneReplays: () => db.prepare('DELETE FROM webhook_replays WHERE created_at < ?'),
    insertDelivery: () => db.prepare(WRITE_SQL.insertDelivery),
    // Seqs only, from the covering partial index: rows are read when they are sent.
    due: () =>
      db.prepare(
        `SELECT d.seq, d.next_attempt_ms FROM webhook_deliveries d
       JOIN webhook_endpoints w ON w.id = d.endpoint_id
       WHERE d.status = 'pending' AND d.next_attempt_ms <= ? AND w.disabled = 0
       ORDER BY d.next_attempt_ms LIMIT ?`,
      ),
    sendable: () =>
      db.prepare(
        `SELECT ${SENDABLE}
       FROM webhook_deliveries d
       JOIN webhook_endpoints w ON w.id = d.endpoint_id
       LEFT JOIN events e ON e.seq = d.event_seq
       WHERE d.seq = ?`,
      ),
    // The same rows for a list of seqs (a JSON array), in one statement.
    sendableMany: () =>
      db.prepare(
        `SELECT ${SENDABLE}
       FROM json_each(?) j
       JOIN webhook_deliveries d ON d.seq = j.value
       JOIN webhook_endpoints w ON w.id = d.endpoint_id
       LEFT JOIN events e ON e.seq = d.event_seq
       ORDER BY j.key`,
      ),
    storedId: () => db.prepare('SELECT seq FROM webhook_deliveries WHERE id = ?').pluck(),
    derivedAt: () => db.prepare('SELECT seq FROM webhook_deliveries WHERE seq = ? AND id IS NULL').pluck(),
    idsKey: () => db.prepare('SELECT key FROM webhook_delivery_ids_key WHERE id = 1').pluck(),
    deliveryBySeq: () => db.prepare('SELECT * FROM webhook_deliveries WHERE seq = ?'),
    insertAttempt: () =>
      db.prepare(
        `INSERT INTO webhook_attempts (delivery_seq, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at, duration_ms, response_code, error)
       VALUES (@delivery_seq, @attempt, @account_id, @live_mode, @manual, @webhook_timestamp, @attempted_at, @duration_ms, @response_code, @error)`,
      ),
    // Guarded by the state the failure was judged from (docs/architecture.md, Lifecycles).
    updateDelivery: () =>
      db.prepare(
        `UPDATE webhook_deliveries SET status = @status, attempts = @attempts, auto_attempts = @auto_attempts, next_attempt_ms = @next_attempt_ms,
         last_response_code = @last_response_code, last_error = @last_error, updated_at = @updated_at
       WHERE seq = @seq AND status = @from`,
      ),
    cancelPending: () =>
      db.prepare(
        `UPDATE webhook_deliveries SET status = 'canceled', next_attempt_ms = NULL, last_error = ?, updated_at = ?
       WHERE endpoint_id = ? AND status = 'pending'`,
      ),
    deliveriesPage: () => db.prepare('SELECT * FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?'),
    attemptsOf: () => db.prepare('SELECT * FROM webhook_attempts WHERE delivery_seq = ? ORDER BY attempt'),
  });

  const ids = new DeliveryIds(s.idsKey.get() as Buffer);
  /** The row's seq for a public id: a stored one (older rows, test sends), else a derived one. */
  const seqOfId = (id: string): number | undefined =>
    (s.storedId.get(id) as number | undefined) ?? ((seq) => (seq === undefined ? undefined : (s.derivedAt.get(seq) as number | undefined)))(ids.seqOf(id));
  const withId = (row: DeliveryRow | undefined): DeliveryRow | undefined => {
    if (row && row.id === null) row.id = ids.of(row.seq);
    return row;
  };

  return {
    /** Fills in the public id of rows read elsewhere (status page). */
    withId: (row: DeliveryRow) => withId(row)!,
    seqOfId,
    insertEndpoint: (
      row: Pick<EndpointRow, 'id' | 'account_id' | 'live_mode' | 'url' | 'description' | 'secret' | 'from_seq' | 'filter_types' | 'created_at' | 'updated_at'> &
        Partial<Pick<EndpointRow, 'metadata'>>,
    ) => void s.insertEndpoint.run({ metadata: '{}', ...row }),
    endpoint: (id: string) => s.endpoint.get(id) as EndpointRow | undefined,
    updateEndpoint: (row: Pick<EndpointRow, 'id' | 'description' | 'disabled' | 'disabled_reason' | 'updated_at'>) => void s.updateEndpoint.run(row),
    setMetadata: (id: string, metadata: string, at: string) => void s.setMetadata.run(metadata, at, id),
    deleteEndpoint: (id: string) => s.deleteEndpoint.run(id).changes > 0,
    activeEndpoints: () => s.activeEndpoints.all() as EndpointRow[],
    endpointsPage(accountIds: string[], liveMode: boolean, limit: number, offset: number): { rows: EndpointRow[]; total: number } {
      // The id list is short (one account, or an organization's accounts); it is bound, never spliced.
      const marks = accountIds.map(() => '?').join(', ');
      const where = `account_id IN (${marks}) AND live_mode = ?`;
      const rows = db
        .prepare(`SELECT * FROM webhook_endpoints WHERE ${where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`)
        .all(...accountIds, liveMode ? 1 : 0, limit, offset) as EndpointRow[];
      const total = (db.prepare(`SELECT COUNT(*) AS n FROM webhook_endpoints WHERE ${where}`).get(...accountIds, liveMode ? 1 : 0) as { n: number }).n;
      return { rows, total };
    },
    maxEventSeq: () => (s.maxSeq.get() as { seq: number }).seq,
    cursor: () => (s.cursor.get() as { seq: number }).seq,
    eventsAfter: (seq: number, limit: number) => s.eventsAfter.all(seq, limit) as EventRowLite[],
    insertDelivery: (row: {
      /** Null: derived from the seq. */
      id: string | null;
      account_id: string;
      live_mode: number;
      endpoint_id: string;
      event_id: string;
      event_seq: number | null;
      event_type: string;
      event_account_id: string;
      payload: string | null;
      next_attempt_ms: number | null;
      created_at: string;
    }) => s.insertDelivery.run(row).changes > 0,
    due: (nowMs: number, limit: number) => s.due.all(nowMs, limit) as Array<{ seq: number; next_attempt_ms: number }>,
    sendable: (seq: number) => s.sendable.get(seq) as SendableRow | undefined,
    sendableMany: (seqs: number[]) => s.sendableMany.all(JSON.stringify(seqs)) as SendableRow[],
    delivery(id: string): DeliveryRow | undefined {
      const seq = seqOfId(id);
      return seq === undefined ? undefined : withId(s.deliveryBySeq.get(seq) as DeliveryRow | undefined);
    },
    deliveryBySeq: (seq: number) => withId(s.deliveryBySeq.get(seq) as DeliveryRow | undefined),
    insertAttempt: (row: AttemptRow) => void s.insertAttempt.run(row),
    /** False when the delivery is no longer in `from`: nothing was written. */
    updateDelivery: (
      row: Pick<DeliveryRow, 'seq' | 'status' | 'attempts' | 'auto_attempts' | 'next_attempt_ms' | 'last_response_code' | 'last_error' | 'updated_at'> & {
        from: DeliveryRow['status'];
      },
    ) => s.updateDelivery.run(row).changes === 1,
    cancelPending: (endpointId: string, reason: string, now: string) => void s.cancelPending.run(reason, now, endpointId),
    setGates: (id: string, rate: number | null, maxInFlight: number | null, now: string) => void s.setGates.run(rate, maxInFlight, now, id),
    /** FIFO on or off for an endpoint, its pending deliveries joining or leaving the order. */
    setFifo(id: string, on: boolean, nowMs: number, now: string): void {
      s.setFifo.run(on ? 1 : 0, now, id);
      (on ? s.fifoOn : s.fifoOff).run({ id, now_ms: nowMs });
    },
    fifoIds: () => s.fifoIds.all() as string[],
    /** Gives a first-in-first-out endpoint's oldest parked delivery a schedule if it has no head. */
    promoteNext: (id: string, nowMs: number) => s.promoteNext.run({ id, now_ms: nowMs }).changes > 0,
    gatedCount: () => s.gatedCount.get() as number,
    reschedule: (rows: Array<[number, number]>) => void s.reschedule.run(JSON.stringify(rows)),
    eventsBetween: (afterSeq: number, toSeq: number, liveMode: number) => s.eventsBetween.all(afterSeq, toSeq, liveMode) as EventRowLite[],
    setFilterTypes: (id: string, types: string[] | null, now: string) => void s.setFilterTypes.run(types === null ? null : JSON.stringify(types), now, id),
    rotateSecret: (row: { id: string; secret: string; expires_ms: number; updated_at: string }) => void s.rotateSecret.run(row),
    markDisabled: (id: string, atMs: number | null, seq: number | null) => void s.markDisabled.run(atMs, seq, id),
    markFailing: (id: string, sinceMs: number) => void s.markFailing.run(sinceMs, id),
    clearFailing: (id: string) => void s.clearFailing.run({ id }),
    /** Enabled endpoints failing since `sinceMs` or before. */
    failingSince: (sinceMs: number) => s.failingEndpoints.all(sinceMs) as EndpointRow[],
    failingIds: () => s.failingIds.all() as string[],
    setNoticed: (id: string) => void s.setNoticed.run(id),
    /** Inserts the replay's deliveries; their seqs are contiguous (one statement, one writer). */
    /** `changedSince`: only rows last changed then or later (re-enabling: what its disabling canceled). */
    /** The highest delivery seq now: where a replay's scan stops (its own rows come after). */
    maxDeliverySeq: () => s.maxDeliverySeq.get() as number,
    /** Up to `limit` of the endpoint's deliveries with seq in (afterSeq, uptoSeq], in seq order. */
    replayScan: (endpointId: string, afterSeq: number, uptoSeq: number, limit: number) =>
      s.replayScan.all(endpointId, afterSeq, uptoSeq, limit) as Array<
        Pick<DeliveryRow, 'seq' | 'event_seq' | 'event_type' | 'status' | 'created_at' | 'updated_at'>
      >,
    pendingEventSeqs: (endpointId: string) => new Set(s.pendingEventSeqs.all(endpointId) as number[]),
    /** New pending deliveries of replay `replayId` for the events of the deliveries `sourceSeqs`. */
    insertReplayed(
      endpoint: Pick<EndpointRow, 'id' | 'fifo'>,
      sourceSeqs: number[],
      at: { nowMs: number; now: string },
      replayId: string,
    ): { first: number | null; last: number | null; total: number } {
      if (sourceSeqs.length === 0) return { first: null, last: null, total: 0 };
      const r = s.replay.run({ seqs: JSON.stringify(sourceSeqs), fifo: endpoint.fifo, now_ms: at.nowMs, now: at.now, replay_id: replayId });
      if (r.changes === 0) return { first: null, last: null, total: 0 };
      // One INSERT … SELECT: its rows took consecutive seqs.
      const last = Number(r.lastInsertRowid);
      return { first: last - r.changes + 1, last, total: r.changes };
    },
    extendReplay: (id: string, made: { first: number | null; last: number | null; total: number }) =>
      void s.extendReplay.run({ id, first: made.first, last: made.last, total: made.total }),
    insertCatchUp(
      rows: Array<[number, string]>,
      at: { nowMs: number; now: string },
      replayId: string,
    ): { first: number | null; last: number | null; total: number } {
      if (rows.length === 0) return { first: null, last: null, total: 0 };
      const r = s.insertCatchUp.run({ rows: JSON.stringify(rows), now_ms: at.nowMs, now: at.now, replay_id: replayId });
      if (r.changes === 0) return { first: null, last: null, total: 0 };
      const last = Number(r.lastInsertRowid);
      return { first: last - r.changes + 1, last, total: r.changes };
    },
    insertReplay: (row: ReplayRow) => void s.insertReplay.run(row),
    replayById: (id: string) => s.replayById.get(id) as ReplayRow | undefined,
    replayCounts(r: ReplayRow): Record<DeliveryRow['status'], number> {
      const counts = { pending: 0, succeeded: 0, failed: 0, canceled: 0 };
      if (r.first_seq === null || r.last_seq === null) return counts;
      for (const { status, n } of s.replayCounts.all(r.endpoint_id, r.first_seq, r.last_seq, r.id) as Array<{ status: DeliveryRow['status']; n: number }>)
        counts[status] = n;
      return counts;
    },
    /** Deletes up to `limit` finished deliveries last changed before `cutoff` (ISO); how many. */
    prune: (cutoff: string, limit: number) => s.pruneDeliveries.run(cutoff, limit).changes,
    pruneReplays: (cutoff: string) => void s.pruneReplays.run(cutoff),
    deliveriesPage: (endpointId: string, limit: number, offset: number) => ({
      rows: (s.deliveriesPage.all(endpointId, limit, offset) as DeliveryRow[]).map((r) => withId(r)!),
      // Kept per endpoint by triggers (decision 0270): the endpoint's id stands where an account's would.
      total: listCount(db, 'webhook_deliveries', [endpointId], false),
    }),
    attemptsOf: (deliverySeq: number) => s.attemptsOf.all(deliverySeq) as AttemptRow[],
  };
}

export type WebhooksStore = ReturnType<typeof webhooksStore>;

/** A few endpoints' sealed secrets, read without the module running: doctor checks the key against them. */
export function sealedSecretSample(db: Db, limit = 5): Array<{ id: string; secret: string }> {
  return db.prepare('SELECT id, secret FROM webhook_endpoints ORDER BY created_at DESC LIMIT ?').all(limit) as Array<{ id: string; secret: string }>;
}

export function endpointCount(db: Db): number {
  return db.prepare('SELECT count(*) FROM webhook_endpoints').pluck().get() as number;
}

/**
 * What doctor and /metrics say of deliveries, read without the module running: endpoints failing
 * since at least `failingBeforeMs` (and not disabled), disabled ones, and deliveries waiting.
 */
export function webhookHealth(
  db: Db,
  failingBeforeMs: number,
): { failing: Array<{ id: string; url: string; failing_since_ms: number }>; disabled: number; pending: number } {
  return {
    failing: db
      .prepare(
        'SELECT id, url, failing_since_ms FROM webhook_endpoints WHERE failing_since_ms IS NOT NULL AND failing_since_ms <= ? AND disabled = 0 ORDER BY failing_since_ms',
      )
      .all(failingBeforeMs) as Array<{ id: string; url: string; failing_since_ms: number }>,
    disabled: db.prepare('SELECT count(*) FROM webhook_endpoints WHERE disabled = 1 AND disabled_at_ms IS NOT NULL').pluck().get() as number,
    // Counted on the partial index of pending deliveries.
    pending: db.prepare("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'").pluck().get() as number,
  };
}
