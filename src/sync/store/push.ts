import type { Db } from '../../db/database.js';
import { tx } from '../../db/database.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { storeSide } from './sync-store.js';
import { STATE } from '../shared/state.js';
import { SYNC_PROTOCOL, type PushBody, type PushResponse } from '../shared/wire.js';
import { boxZone } from '../shared/summary.js';

/**
 * Copies events made at the store into the sync outbox, after the facts they report (so the central
 * applies a sale before it re-emits the sale's event). The cursor moves in the same transaction and
 * the record id is derived from the event id, so running it twice appends nothing twice.
 */
export function tailEvents(db: Db, limit = 1000): number {
  const store = storeSide(db);
  return tx(db, () => {
    const cursor = Number(store.state(STATE.eventsCursor) ?? 0);
    const rows = store.eventsAfter(cursor, limit);
    for (const e of rows) {
      appendSyncRecord(db, {
        id: `sync_${e.id}`,
        kind: 'event',
        accountId: e.account_id,
        liveMode: e.live_mode === 1,
        createdAt: e.created_at,
        payload: { id: e.id, type: e.type, object_id: e.object_id, payload: JSON.parse(e.payload), created_at: e.created_at },
      });
    }
    if (rows.length) store.setState(STATE.eventsCursor, rows[rows.length - 1].seq);
    return rows.length;
  });
}

/**
 * The next batch after the acknowledged cursor, in seq order; null when nothing waits. At most
 * `size` records and about `maxBytes` of payload (always at least one record), so a batch stays
 * under the central's body limit.
 */
export function nextBatch(db: Db, storeId: string, size: number, maxBytes = 512 * 1024): PushBody | null {
  const store = storeSide(db);
  const acked = Number(store.state(STATE.ackedSeq) ?? 0);
  const all = store.outboxAfter(acked, size);
  if (!all.length) return null;
  let bytes = 0;
  let take = 0;
  while (take < all.length && (take === 0 || bytes + all[take].payload.length + 256 <= maxBytes)) {
    bytes += all[take].payload.length + 256;
    take++;
  }
  const rows = all.slice(0, take);
  let prev = acked;
  // What stays behind this batch: one count over the outbox index past it.
  const rest = store.waiting(rows[rows.length - 1].seq);
  return {
    protocol: SYNC_PROTOCOL,
    store_id: storeId,
    waiting: rest.n,
    waiting_since: rest.oldest,
    zone: boxZone(),
    records: rows.map((r) => {
      const rec = {
        seq: r.seq,
        prev_seq: prev,
        id: r.id,
        kind: r.kind,
        account_id: r.account_id,
        live_mode: r.live_mode === 1,
        payload: JSON.parse(r.payload) as Record<string, unknown>,
        created_at: r.created_at,
      };
      prev = r.seq;
      return rec;
    }),
  };
}

/** Stores what the central has durably applied. Never moves backwards except by `resetAck`. */
export function recordAck(db: Db, res: Pick<PushResponse, 'applied_seq'>): number {
  const store = storeSide(db);
  return tx(db, () => {
    const acked = Number(store.state(STATE.ackedSeq) ?? 0);
    const next = Math.max(acked, res.applied_seq);
    store.setState(STATE.ackedSeq, next);
    return next;
  });
}

/**
 * The central says it has applied less than we thought (it was restored from a backup): push again
 * from there. The outbox is never pruned below what the central confirmed, so the records exist.
 */
export function resetAck(db: Db, appliedSeq: number): void {
  const store = storeSide(db);
  tx(db, () => {
    const acked = Number(store.state(STATE.ackedSeq) ?? 0);
    if (appliedSeq < acked) store.setState(STATE.ackedSeq, appliedSeq);
  });
}

export function waitingCount(db: Db): number {
  const store = storeSide(db);
  return store.waiting(Number(store.state(STATE.ackedSeq) ?? 0)).n;
}
