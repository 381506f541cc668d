import type { Db } from '../../db/database.js';
import { DeliveryIds } from './delivery-ids.js';

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
       status, attempts, auto_attempts, next_attempt_ms, created_at, updated_at)
     SELECT NULL, w.account_id, w.live_mode, w.id, e.id, e.seq, e.type, e.account_id, NULL,
       'pending', 0, 0, @next_attempt_ms, @created_at, @created_at
     FROM json_each(@rows) j
     JOIN events e ON e.seq = j.value ->> 0
     JOIN webhook_endpoints w ON w.id = j.value ->> 1 AND w.disabled = 0
     WHERE e.seq > (SELECT seq FROM webhook_cursor WHERE id = 1)
     ORDER BY j.key`,
  // Never backwards: a fan-out redone after a crash may end before one already recorded.
  advanceCursor: 'UPDATE webhook_cursor SET seq = MAX(seq, @seq) WHERE id = 1',
  // A 2xx settles the delivery whatever happened meanwhile; its attempt row takes the new count.
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
  const s = {
    insertEndpoint: db.prepare(
      `INSERT INTO webhook_endpoints (id, account_id, live_mode, url, description, secret, disabled, disabled_reason, from_seq, created_at, updated_at)
       VALUES (@id, @account_id, @live_mode, @url, @description, @secret, 0, NULL, @from_seq, @created_at, @updated_at)`,
    ),
    endpoint: db.prepare('SELECT * FROM webhook_endpoints WHERE id = ?'),
    updateEndpoint: db.prepare(
      `UPDATE webhook_endpoints SET description = @description, disabled = @disabled, disabled_reason = @disabled_reason, updated_at = @updated_at
       WHERE id = @id`,
    ),
    deleteEndpoint: db.prepare('DELETE FROM webhook_endpoints WHERE id = ?'),
    activeEndpoints: db.prepare('SELECT * FROM webhook_endpoints WHERE disabled = 0'),
    maxSeq: db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM events'),
    cursor: db.prepare('SELECT seq FROM webhook_cursor WHERE id = 1'),
    eventsAfter: db.prepare('SELECT seq, account_id, live_mode FROM events WHERE seq > ? ORDER BY seq LIMIT ?'),
    insertDelivery: db.prepare(WRITE_SQL.insertDelivery),
    // Seqs only, from the covering partial index: rows are read when they are sent.
    due: db.prepare(
      `SELECT d.seq, d.next_attempt_ms FROM webhook_deliveries d
       JOIN webhook_endpoints w ON w.id = d.endpoint_id
       WHERE d.status = 'pending' AND d.next_attempt_ms <= ? AND w.disabled = 0
       ORDER BY d.next_attempt_ms LIMIT ?`,
    ),
    sendable: db.prepare(
      `SELECT ${SENDABLE}
       FROM webhook_deliveries d
       JOIN webhook_endpoints w ON w.id = d.endpoint_id
       LEFT JOIN events e ON e.seq = d.event_seq
       WHERE d.seq = ?`,
    ),
    // The same rows for a list of seqs (a JSON array), in one statement.
    sendableMany: db.prepare(
      `SELECT ${SENDABLE}
       FROM json_each(?) j
       JOIN webhook_deliveries d ON d.seq = j.value
       JOIN webhook_endpoints w ON w.id = d.endpoint_id
       LEFT JOIN events e ON e.seq = d.event_seq
       ORDER BY j.key`,
    ),
    storedId: db.prepare('SELECT seq FROM webhook_deliveries WHERE id = ?').pluck(),
    derivedAt: db.prepare('SELECT seq FROM webhook_deliveries WHERE seq = ? AND id IS NULL').pluck(),
    idsKey: db.prepare('SELECT key FROM webhook_delivery_ids_key WHERE id = 1').pluck(),
    deliveryBySeq: db.prepare('SELECT * FROM webhook_deliveries WHERE seq = ?'),
    insertAttempt: db.prepare(
      `INSERT INTO webhook_attempts (delivery_seq, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at, duration_ms, response_code, error)
       VALUES (@delivery_seq, @attempt, @account_id, @live_mode, @manual, @webhook_timestamp, @attempted_at, @duration_ms, @response_code, @error)`,
    ),
    updateDelivery: db.prepare(
      `UPDATE webhook_deliveries SET status = @status, attempts = @attempts, auto_attempts = @auto_attempts, next_attempt_ms = @next_attempt_ms,
         last_response_code = @last_response_code, last_error = @last_error, updated_at = @updated_at
       WHERE seq = @seq`,
    ),
    cancelPending: db.prepare(
      `UPDATE webhook_deliveries SET status = 'canceled', next_attempt_ms = NULL, last_error = ?, updated_at = ?
       WHERE endpoint_id = ? AND status = 'pending'`,
    ),
    deliveriesPage: db.prepare(
      'SELECT * FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?',
    ),
    deliveryCount: db.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = ?'),
    attemptsOf: db.prepare('SELECT * FROM webhook_attempts WHERE delivery_seq = ? ORDER BY attempt'),
  };

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
    insertEndpoint: (row: Omit<EndpointRow, 'disabled' | 'disabled_reason'>) => void s.insertEndpoint.run(row),
    endpoint: (id: string) => s.endpoint.get(id) as EndpointRow | undefined,
    updateEndpoint: (row: Pick<EndpointRow, 'id' | 'description' | 'disabled' | 'disabled_reason' | 'updated_at'>) => void s.updateEndpoint.run(row),
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
    updateDelivery: (
      row: Pick<DeliveryRow, 'seq' | 'status' | 'attempts' | 'auto_attempts' | 'next_attempt_ms' | 'last_response_code' | 'last_error' | 'updated_at'>,
    ) => void s.updateDelivery.run(row),
    cancelPending: (endpointId: string, reason: string, now: string) => void s.cancelPending.run(reason, now, endpointId),
    deliveriesPage: (endpointId: string, limit: number, offset: number) => ({
      rows: (s.deliveriesPage.all(endpointId, limit, offset) as DeliveryRow[]).map((r) => withId(r)!),
      total: (s.deliveryCount.get(endpointId) as { n: number }).n,
    }),
    attemptsOf: (deliverySeq: number) => s.attemptsOf.all(deliverySeq) as AttemptRow[],
  };
}

export type WebhooksStore = ReturnType<typeof webhooksStore>;
