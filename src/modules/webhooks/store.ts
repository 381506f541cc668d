import type { Db } from '../../db/database.js';
import { listCount } from '../../db/list-counts.js';
import { DeliveryIds } from './delivery-ids.js';
import { preparedOnUse } from '../../db/statements.js';
import { limitedAll } from '../../db/limited.js';
import { WRITE_SQL } from './write-sql.js';
import { noticeStore } from './notice-store.js';
import { replayStore, type ReplayRow, type ReplayFilter } from './replay-store.js';

export type { ReplayRow, ReplayFilter };

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
  /** The start of the answer's body (1 KiB at most, post.ts); null without one. */
  response_body: string | null;
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

/** A due delivery as the due index has it. */
export interface DueRow {
  seq: number;
  next_attempt_ms: number;
  endpoint_id: string;
}

// Only what an attempt reads: the rows are read for every attempt, and each column is a copy.
const SENDABLE = `d.seq, d.account_id, d.endpoint_id, d.event_id, d.event_type, d.event_account_id, d.payload, d.status,
  d.next_attempt_ms, w.disabled AS endpoint_disabled, e.payload AS event_payload`;

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
    insertDelivery: () => db.prepare(WRITE_SQL.insertDelivery),
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
        `INSERT INTO webhook_attempts (delivery_seq, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at, duration_ms, response_code, error,
         response_body)
       VALUES (@delivery_seq, @attempt, @account_id, @live_mode, @manual, @webhook_timestamp, @attempted_at, @duration_ms, @response_code, @error, @response_body)`,
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

  // Run once a pass and once an emitted event: the limit written into the SQL (limited.ts).
  const eventsAfter = limitedAll<[number], EventRowLite>(db, 'SELECT seq, account_id, live_mode, type FROM events WHERE seq > ? ORDER BY seq LIMIT');
  // Seqs and endpoints only, from the covering partial index: rows are read when they are sent.
  // The due order is the index's own: (next_attempt_ms, endpoint_id, seq), so a read can go on
  // from the last row another read returned (`dueAfter`).
  const due = limitedAll<[number], DueRow>(
    db,
    `SELECT d.seq, d.next_attempt_ms, d.endpoint_id FROM webhook_deliveries d
     JOIN webhook_endpoints w ON w.id = d.endpoint_id
     WHERE d.status = 'pending' AND d.next_attempt_ms <= ? AND w.disabled = 0
     ORDER BY d.next_attempt_ms, d.endpoint_id, d.seq LIMIT`,
  );
  // Past a row in two ranges of the index (one row-value range over all three columns scans the
  // rows of the same time and endpoint before it: a fan-out batch's thousands).
  const dueSameKey = limitedAll<[number, string, number], DueRow>(
    db,
    `SELECT d.seq, d.next_attempt_ms, d.endpoint_id FROM webhook_deliveries d
     JOIN webhook_endpoints w ON w.id = d.endpoint_id
     WHERE d.status = 'pending' AND d.next_attempt_ms = ? AND d.endpoint_id = ? AND d.seq > ? AND w.disabled = 0
     ORDER BY d.seq LIMIT`,
  );
  const dueAfterKey = limitedAll<[number, number, string], DueRow>(
    db,
    `SELECT d.seq, d.next_attempt_ms, d.endpoint_id FROM webhook_deliveries d
     JOIN webhook_endpoints w ON w.id = d.endpoint_id
     WHERE d.status = 'pending' AND d.next_attempt_ms <= ? AND (d.next_attempt_ms, d.endpoint_id) > (?, ?) AND w.disabled = 0
     ORDER BY d.next_attempt_ms, d.endpoint_id, d.seq LIMIT`,
  );
  const ids = new DeliveryIds(s.idsKey.get() as Buffer);
  /** The row's seq for a public id: a stored one (older rows, test sends), else a derived one. */
  const seqOfId = (id: string): number | undefined =>
    (s.storedId.get(id) as number | undefined) ?? ((seq) => (seq === undefined ? undefined : (s.derivedAt.get(seq) as number | undefined)))(ids.seqOf(id));
  const withId = (row: DeliveryRow | undefined): DeliveryRow | undefined => {
    if (row && row.id === null) row.id = ids.of(row.seq);
    return row;
  };

  return {
    ...replayStore(db),
    ...noticeStore(db),
    /** Fills in the public id of rows read elsewhere (status page). */
    withId: (row: DeliveryRow) => withId(row)!,
    seqOfId,
    ...noticeStore(db),
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
    eventsAfter: (seq: number, limit: number) => eventsAfter(limit, seq),
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
    due: (nowMs: number, limit: number) => due(limit, nowMs),
    /** The due rows after `after` in the due order (`after` itself due by `nowMs`). */
    dueAfter(nowMs: number, limit: number, after: DueRow): DueRow[] {
      const rows = dueSameKey(limit, after.next_attempt_ms, after.endpoint_id, after.seq);
      if (rows.length < limit) rows.push(...dueAfterKey(limit - rows.length, nowMs, after.next_attempt_ms, after.endpoint_id));
      return rows;
    },
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
    /** Deletes up to `limit` finished deliveries last changed before `cutoff` (ISO); how many. */
    prune: (cutoff: string, limit: number) => s.pruneDeliveries.run(cutoff, limit).changes,
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
