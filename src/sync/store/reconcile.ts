import type { Db } from '../../db/database.js';
import type { AppContext } from '../../context.js';
import type { SyncRegistry } from '../shared/registry.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { tailEvents } from './push.js';
import { storeSide, type ReconciliationRow } from './sync-store.js';
import { STATE } from '../shared/state.js';
import { boxZone, dayRange, factTotals, toSummary, type DaySpan } from '../shared/summary.js';
import type { CentralClient } from './transport.js';
import type { SummaryRow } from '../shared/wire.js';
import { originTotals } from '../shared/row-totals.js';

export interface ReconcileResult {
  day: string;
  /** The span compared, [from, until) in UTC: the day in `zone` (the central's answer says which it summed). */
  from: string;
  until: string;
  /** The zone `day` was taken in; 'UTC' when the central summed the UTC day (a central before zones). */
  zone: string;
  /** `behind`: the central has not applied every record of that day yet, so totals cannot be compared. */
  state: 'equal' | 'different' | 'behind';
  rows: ReconciliationRow[];
  differences: ReconciliationRow[];
}

/**
 * The store's own totals over one day's span: facts by kind (count, amount per currency), events,
 * and the ledger rows and intents written on this box (not those the central's feed brought).
 */
export function storeSummary(registry: SyncRegistry, db: Db, span: DaySpan): SummaryRow[] {
  const { from, until } = span;
  const store = storeSide(db);
  return [
    ...factTotals(registry, store.storeFacts(from, until)),
    ...store.storeEvents(from, until).map(toSummary),
    ...originTotals(registry, db, from, until, null),
  ];
}

/**
 * The last outbox seq that may report a row of that day. A ledger row or intent made just before
 * midnight may sit in a record stamped just after it, so a minute past the day's end is included.
 */
function lastSeqOfDay(db: Db, until: string): number {
  return storeSide(db).lastSeqBefore(isoTime(Date.parse(until) + 60_000));
}

function keyOf(r: { account_id: string; live_mode: boolean | number; currency: string; measure: string }): string {
  return `${r.account_id}|${r.live_mode ? 1 : 0}|${r.currency}|${r.measure}`;
}

/** Pairs both sides' totals; a measure present on one side only counts as zero on the other. */
export function compareSummaries(day: string, mine: SummaryRow[], theirs: SummaryRow[], checkedAt: string): ReconciliationRow[] {
  const rows = new Map<string, ReconciliationRow>();
  const slot = (r: SummaryRow) => {
    const k = keyOf(r);
    let row = rows.get(k);
    if (!row) {
      row = {
        account_id: r.account_id,
        live_mode: r.live_mode ? 1 : 0,
        day,
        currency: r.currency,
        measure: r.measure,
        store_count: 0,
        store_sum: 0,
        central_count: 0,
        central_sum: 0,
        checked_at: checkedAt,
      };
      rows.set(k, row);
    }
    return row;
  };
  for (const r of mine) Object.assign(slot(r), { store_count: r.count, store_sum: r.sum });
  for (const r of theirs) Object.assign(slot(r), { central_count: r.count, central_sum: r.sum });
  return [...rows.values()].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
}

/**
 * Compares one day with the central: the store's day, `day` midnight to midnight in the box's time
 * zone (docs/sync.md), asked of the central with the zone. The central answers the span it summed;
 * the store sums that same span, so a central that knows no zones (the UTC day) is still compared
 * like with like. Differences are stored (the status shows them) and reported to
 * central operations as a `reconciliation_report` record, once per distinct difference; nothing is
 * ever patched.
 */
export async function reconcileDay(
  ctx: Pick<AppContext, 'db' | 'clock' | 'registry'>,
  client: CentralClient,
  day: string,
  signal?: AbortSignal,
  zone = boxZone(),
): Promise<ReconcileResult> {
  const { db, clock } = ctx;
  const store = storeSide(db);
  const storeId = store.state(STATE.storeId);
  if (!storeId) throw new Error('this box has no store id: run posd init --central-url first');
  tailEvents(db);
  const central = await client.reconcile(storeId, day, zone, signal);
  const span: DaySpan = central.from && central.until ? { from: central.from, until: central.until } : dayRange(day);
  const spanZone = central.from && central.until ? (central.zone ?? zone) : 'UTC';
  const { until } = span;
  const checkedAt = isoTime(clock.now());
  // The store's totals and its last record of the day from one snapshot, taken after the central
  // answered: a sale of that day made while the request was out is not at the central yet, so the
  // day is `behind` then, not different.
  const { mine, lastOfDay } = tx(db, () => {
    while (tailEvents(db) > 0); // every event so far has its record, so an untailed one reads as behind
    return { mine: storeSummary(ctx.registry.sync, db, span), lastOfDay: lastSeqOfDay(db, until) };
  });
  const said = { day, from: span.from, until: span.until, zone: spanZone };
  if (central.applied_seq < lastOfDay) return { ...said, state: 'behind', rows: [], differences: [] };
  const rows = compareSummaries(day, mine, central.rows, checkedAt);
  const differences = rows.filter((r) => r.store_count !== r.central_count || r.store_sum !== r.central_sum);
  tx(db, () => {
    const before = JSON.stringify(
      store
        .reconciliationDiffs()
        .filter((d) => d.day === day)
        .map(stripTime),
    );
    store.replaceReconciliationDay(day, rows);
    const after = JSON.stringify(differences.map(stripTime));
    if (differences.length && before !== after) {
      const byAccount = new Map<string, ReconciliationRow[]>();
      for (const d of differences) byAccount.set(`${d.account_id}|${d.live_mode}`, [...(byAccount.get(`${d.account_id}|${d.live_mode}`) ?? []), d]);
      for (const list of byAccount.values()) {
        appendSyncRecord(db, {
          id: newId('sync'),
          kind: 'reconciliation_report',
          accountId: list[0].account_id,
          liveMode: list[0].live_mode === 1,
          createdAt: checkedAt,
          payload: { day, differences: list.map(stripTime) },
        });
      }
    }
  });
  return { ...said, state: differences.length ? 'different' : 'equal', rows, differences };
}

function stripTime(r: ReconciliationRow): Omit<ReconciliationRow, 'checked_at'> {
  const { checked_at: _t, ...rest } = r;
  return rest;
}
