import type { Db } from '../../db/database.js';
import { tx } from '../../db/database.js';
import { isoTime, type Clock } from '../../clock.js';
import { newId } from '../../ids.js';
import type { EndpointRow, ReplayFilter, ReplayRow, WebhooksStore, DeliveryRow } from './store.js';

export interface ReplayView {
  id: string;
  endpoint_id: string;
  /** Deliveries made by the replay (one per event). */
  total: number;
  pending: number;
  succeeded: number;
  failed: number;
  canceled: number;
  filters: ReplayFilter & { missed?: boolean };
  created_at: string;
}

export function replayView(store: WebhooksStore, r: ReplayRow): ReplayView {
  const counts = store.replayCounts(r);
  return { id: r.id, endpoint_id: r.endpoint_id, total: r.total, ...counts, filters: JSON.parse(r.filters), created_at: r.created_at };
}

/**
 * A bulk replay (docs/webhooks.md): every event among the endpoint's deliveries that match the
 * filter gets a new pending delivery, due now, with the same event and so the same `webhook-id` (a
 * receiver that deduplicates sees it once). Events whose delivery is still pending are skipped
 * (that one is sent anyway). One statement; the worker sends the rows as any other due rows. Used
 * by the API and by `posd webhooks replay` (beside a running daemon, which finds the rows at its
 * next look at the table).
 */
export function replayDeliveries(db: Db, store: WebhooksStore, clock: Clock, endpoint: EndpointRow, filter: ReplayFilter): ReplayView {
  return tx(db, () => {
    const nowMs = clock.now();
    const now = isoTime(nowMs);
    const made = store.replay(endpoint, filter, nowMs, now);
    // A first-in-first-out endpoint's replayed rows wait behind its pending ones (parked).
    if (endpoint.fifo) store.promoteNext(endpoint.id, nowMs);
    return record(store, endpoint, made, filter, now);
  });
}

/**
 * What an endpoint missed while it was disabled: the deliveries its disabling canceled, sent again,
 * and one delivery for each event its scope had while it was disabled (events the fan-out passed
 * then), with its filters. Called in the transaction that enables it again, before the disabled
 * marks are cleared.
 */
export function replayMissed(
  store: WebhooksStore,
  clock: Clock,
  endpoint: EndpointRow,
  parentOf: (accountId: string) => string | null,
): ReplayView {
  const nowMs = clock.now();
  const now = isoTime(nowMs);
  const disabledAt = endpoint.disabled_at_ms === null ? endpoint.updated_at : isoTime(endpoint.disabled_at_ms);
  const filter: ReplayFilter = { since: isoTime(0), until: now, event_types: null, statuses: ['canceled'] };
  // Only what the disabling canceled: canceled rows changed since then.
  const canceled = store.replay(endpoint, filter, nowMs, now, disabledAt);
  const types = endpoint.filter_types === null ? null : new Set(JSON.parse(endpoint.filter_types) as string[]);
  const rows: Array<[number, string]> = [];
  if (endpoint.disabled_seq !== null) {
    for (const ev of store.eventsBetween(endpoint.disabled_seq, store.cursor(), endpoint.live_mode)) {
      if (ev.seq <= endpoint.from_seq || (types && !types.has(ev.type))) continue;
      if (ev.account_id === endpoint.account_id || parentOf(ev.account_id) === endpoint.account_id) rows.push([ev.seq, endpoint.id]);
    }
  }
  const caught = store.insertCatchUp(rows, nowMs, now);
  if (endpoint.fifo) store.promoteNext(endpoint.id, nowMs);
  const made = {
    first: canceled.first ?? caught.first,
    last: caught.last ?? canceled.last,
    total: canceled.total + caught.total,
  };
  return record(store, endpoint, made, { ...filter, missed: true }, now);
}

function record(
  store: WebhooksStore,
  endpoint: EndpointRow,
  made: { first: number | null; last: number | null; total: number },
  filter: ReplayFilter & { missed?: boolean },
  now: string,
): ReplayView {
  const row: ReplayRow = {
    id: newId('whr'),
    endpoint_id: endpoint.id,
    first_seq: made.first,
    last_seq: made.last,
    total: made.total,
    filters: JSON.stringify(filter),
    created_at: now,
  };
  store.insertReplay(row);
  return replayView(store, row);
}

export const DELIVERY_STATUSES: ReadonlyArray<DeliveryRow['status']> = ['pending', 'succeeded', 'failed', 'canceled'];
