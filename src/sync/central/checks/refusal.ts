import type { AppContext } from '../../../context.js';
import { metrics } from '../../../system/metrics.js';
import { accountsOf } from '../../../accounts/service.js';
import { centralSide } from '../sync-store.js';

/**
 * Tells the pushing box that the central refused one of its records: a `record_rejected` change in
 * its feed only (`to_store_id`), with the code and field, so the box's rejection handler for the
 * kind applies the decision; and one log line per refused record, naming the store.
 */
export function publishRefusal(
  ctx: Pick<AppContext, 'db' | 'log'>,
  r: { id: string; kind: string; account_id: string; live_mode: boolean; seq: number },
  at: { storeId: string; organizationId: string; now: string; stage: 'receipt' | 'projection' },
  refusal: { reason: string; code: string | null; field?: string | null },
): void {
  centralSide(ctx.db).insertFeed({
    organization_id: at.organizationId,
    account_id: r.account_id,
    live_mode: r.live_mode ? 1 : 0,
    kind: 'record_rejected',
    object_id: r.id,
    payload: JSON.stringify({ record_id: r.id, kind: r.kind, reason: refusal.reason, code: refusal.code, field: refusal.field ?? null, store_id: at.storeId }),
    created_at: at.now,
    to_store_id: at.storeId,
  });
  ctx.log.warn(
    {
      event: 'sync.record_rejected',
      store_id: at.storeId,
      record_id: r.id,
      seq: r.seq,
      kind: r.kind,
      code: refusal.code,
      field: refusal.field ?? null,
      stage: at.stage,
      reason: refusal.reason,
    },
    'sync: a record was refused',
  );
}

/**
 * Tells the boxes about records a central-front refused at receipt (the core of a chain on
 * PostgreSQL, as it copies them in): the same feed row and log line as a refusal at the SQLite
 * central's receipt, the code and field read back from the kept reason (`refusalText`).
 */
export function publishFrontRefusals(
  ctx: Pick<AppContext, 'db' | 'log' | 'clock'>,
  store: { store_id: string; account_id: string },
  rows: ReadonlyArray<{ id: string; kind: string; account_id: string; live_mode: number; seq: number; reason: string }>,
  now: string,
): void {
  const organizationId = rows.length ? accountsOf(ctx).account(store.account_id)?.organization_id : undefined;
  if (!organizationId) return;
  const at = { storeId: store.store_id, organizationId, now };
  for (const r of rows) {
    const m = /^([a-z_]+) \(([^)]*)\): /.exec(r.reason);
    publishRefusal(
      ctx,
      { ...r, live_mode: r.live_mode === 1 },
      { ...at, stage: 'receipt' },
      { reason: m ? r.reason.slice(m[0].length) : r.reason, code: m?.[1] ?? null, field: m?.[2] ?? null },
    );
  }
}

/** `posd_sync_store_records{store_id, outcome}`: each store's rejected, held and parked records, read from the counters at scrape time. */
export function registerStoreOutcomeMetrics(ctx: Pick<AppContext, 'db' | 'config'>): void {
  metrics(ctx).gauge({
    name: 'posd_sync_store_records',
    help: "Central: each store's records the central refused (rejected), holds for an applier or review (held), or parked",
    labelNames: ['store_id', 'outcome'],
    collect() {
      this.reset();
      for (const s of centralSide(ctx.db).stores()) {
        this.set({ store_id: s.store_id, outcome: 'rejected' }, s.rejected_count);
        this.set({ store_id: s.store_id, outcome: 'held' }, s.held_count);
        this.set({ store_id: s.store_id, outcome: 'parked' }, s.parked_count);
      }
    },
  });
}
