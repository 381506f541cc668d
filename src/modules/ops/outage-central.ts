import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { centralSide } from '../../sync/central/sync-store.js';
import { silentFor } from '../../sync/central/store-list.js';
import { salesByMethod } from '../intents/service.js';
import { centralStoredStore } from '../terminals/stored/service.js';
import { byState, mergeWindows, toCollect, type OutageReport, type ReportScope, type TakenOfflineRow } from './outage.js';
import { centralOutageStore, type CentralOutageRow } from './outage-store.js';

/**
 * The outage reports at a central (docs/stored-payments.md, "At the central"): the windows its
 * stores reported (`outage_window` records), merged per store as each box merges its own, with
 * what the central holds of each: the sales the store's records wrote during it, the cards it took
 * offline, the stored payments it reported final and the sales to collect. The shape of the box's
 * report, with the store named; `open_checkouts` is null (a checkout at the central does not say
 * which store opened it) and the reconciliation is the central's side of it.
 */
export type CentralOutageReport = Omit<OutageReport, 'open_checkouts'> & { open_checkouts: null };

/** What a central knows of its stores' links now: the stores it has not heard from, each since when. */
export interface CentralOfflineNow {
  offline: boolean;
  silent_stores: Array<{ store_id: string; since: string }>;
}

const LOOK_BACK_MS = 30 * 86_400_000;

function inScope(t: TakenOfflineRow, scope: ReportScope): boolean {
  return scope.accountIds.includes(t.account_id) && t.live_mode === scope.liveMode;
}

function centralReconciliation(ctx: AppContext, storeId: string, startedAt: string, endedAt: string): OutageReport['reconciliation'] {
  const side = centralSide(ctx.db);
  const row = side.storeRow(storeId);
  const waiting = row ? Math.max(0, row.received_seq - row.applied_seq) + row.held_count : 0;
  if (waiting > 0) return { state: 'pushing', records_waiting: waiting, checked_at: null, differences: 0 };
  // A store tells the central of a reconciliation only when its totals differ (a `reconciliation_report`).
  const report = side.latestReport(storeId, startedAt);
  const differs = !!report?.day && report.day >= startedAt.slice(0, 10) && report.day <= endedAt.slice(0, 10);
  return { state: differs ? 'different' : 'unchecked', records_waiting: 0, checked_at: report?.received_at ?? null, differences: differs ? 1 : 0 };
}

function reportOf(
  ctx: AppContext,
  storeId: string,
  w: { started_at: string; ended_at: string; links: CentralOutageRow[] },
  scope: ReportScope,
): CentralOutageReport {
  const stored = centralStoredStore(ctx.db)
    .storedDuring(storeId, w.started_at, w.ended_at)
    .filter((r) => scope.accountIds.includes(r.account_id) && (r.live_mode === 1) === scope.liveMode);
  const taken = new Map<string, TakenOfflineRow>();
  for (const l of w.links) {
    for (const t of JSON.parse(l.taken_offline) as TakenOfflineRow[]) {
      if (!inScope(t, scope)) continue;
      const k = `${t.terminal_id}|${t.account_id}|${t.currency}`;
      const e = taken.get(k) ?? { ...t, count: 0, amount_in_cents: 0 };
      e.count += t.count;
      e.amount_in_cents += t.amount_in_cents;
      taken.set(k, e);
    }
  }
  return {
    store_id: storeId,
    started_at: w.started_at,
    ended_at: w.ended_at,
    links: w.links.map((l) => ({ link: l.link, started_at: l.started_at, ended_at: l.ended_at })),
    sales: salesByMethod(ctx, w.started_at, w.ended_at, scope.liveMode, scope.accountIds, storeId),
    taken_offline: [...taken.values()].sort((a, b) => a.terminal_id.localeCompare(b.terminal_id) || a.currency.localeCompare(b.currency)),
    stored_payments: byState(stored),
    to_collect: stored.filter((r) => r.status === 'declined' || r.status === 'expired').map((r) => toCollect(ctx, r, r)),
    open_checkouts: null,
    reconciliation: centralReconciliation(ctx, storeId, w.started_at, w.ended_at),
  };
}

/** The reports of the latest outages the stores a key reads reported (one store with `storeId`), newest first. */
export function centralOutageReports(
  ctx: AppContext,
  scope: ReportScope,
  opts: { storeId?: string; from?: string; limit?: number } = {},
): CentralOutageReport[] {
  const rows = centralOutageStore(ctx.db).inScope(scope, {
    storeId: opts.storeId ?? null,
    from: opts.from ?? isoTime(ctx.clock.now() - LOOK_BACK_MS),
    limit: 5000,
  });
  const byStore = new Map<string, CentralOutageRow[]>();
  for (const r of rows) byStore.set(r.origin_store_id, [...(byStore.get(r.origin_store_id) ?? []), r]);
  const reports: CentralOutageReport[] = [];
  for (const [storeId, windows] of byStore) {
    for (const w of mergeWindows(windows))
      reports.push(reportOf(ctx, storeId, w as { started_at: string; ended_at: string; links: CentralOutageRow[] }, scope));
  }
  return reports.sort((a, b) => (b.ended_at ?? '').localeCompare(a.ended_at ?? '') || a.store_id!.localeCompare(b.store_id!)).slice(0, opts.limit ?? 5);
}

/** The stores of a key's accounts the central has not heard from past `sync.store_silent_ms` (the stores panel's "silent"), each since its last push. */
export function centralOfflineNow(ctx: AppContext, scope: ReportScope): CentralOfflineNow {
  const now = ctx.clock.now();
  const silent = centralSide(ctx.db)
    .stores()
    .filter((s) => scope.accountIds.includes(s.account_id) && silentFor(s, now) > ctx.config.sync.store_silent_ms)
    .map((s) => ({ store_id: s.store_id, since: s.last_push_at ?? s.created_at }));
  return { offline: silent.length > 0, silent_stores: silent };
}
