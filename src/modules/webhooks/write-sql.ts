/** The webhooks store's routine writes, apart: the writer thread prepares them on its own connection. */

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
       duration_ms, response_code, error, response_body)
     SELECT seq, attempts, account_id, live_mode, @manual, @webhook_timestamp, @attempted_at, @duration_ms, @response_code, NULL, @response_body
     FROM webhook_deliveries WHERE seq = @seq`,
  // The same for many successes with one response code and kind (`seqs`: a JSON array of distinct
  // seqs; `rows`: [seq, webhook_timestamp, attempted_at, duration_ms, response_body] each), two statements a group.
  markSucceededMany: `UPDATE webhook_deliveries SET status = 'succeeded', attempts = attempts + 1, auto_attempts = auto_attempts + @auto,
       next_attempt_ms = NULL, last_response_code = @response_code, last_error = NULL, updated_at = @updated_at
     WHERE seq IN (SELECT value FROM json_each(@seqs))`,
  insertSucceededAttempts: `INSERT INTO webhook_attempts (delivery_seq, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at,
       duration_ms, response_code, error, response_body)
     SELECT d.seq, d.attempts, d.account_id, d.live_mode, @manual, j.value ->> 1, j.value ->> 2, j.value ->> 3, @response_code, NULL, j.value ->> 4
     FROM json_each(@rows) j JOIN webhook_deliveries d ON d.seq = j.value ->> 0`,
} as const;
export type WriteStatement = keyof typeof WRITE_SQL;
