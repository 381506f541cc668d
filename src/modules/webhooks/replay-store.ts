import type { Db } from '../../db/database.js';
import { preparedOnUse } from '../../db/statements.js';
import type { DeliveryRow, EndpointRow } from './store.js';

/** The SQL of bulk replays and of re-enabling's catch-up (replay.ts); part of the webhooks store. */

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

export function replayStore(db: Db) {
  const s = preparedOnUse({
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
    pruneReplays: () => db.prepare('DELETE FROM webhook_replays WHERE created_at < ?'),
  });

  return {
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
    pruneReplays: (cutoff: string) => void s.pruneReplays.run(cutoff),
  };
}
