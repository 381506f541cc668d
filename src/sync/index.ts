import { provideStatus } from '../system/status-sources.js';
import { registerStoreOutcomeMetrics } from './central/checks/refusal.js';
import { centralSide } from './central/sync-store.js';
import { listStores, silentFor } from './central/store-list.js';
import { Type } from '@sinclair/typebox';
import type { PosdModule } from '../api/module.js';
import { Authenticator } from '../api/auth.js';
import { accountsOf } from '../accounts/service.js';
import { centralRoutes } from './central/routes.js';
import { centralRecordRoutes } from './central/records.js';
import { SyncWorker } from './store/client.js';
import { projectorWorker } from './central/projector.js';
import { lazyPgCoreWorker, pgCoreOf } from './central/pg-core-slot.js';
import { syncStatus, type SyncStatus } from './status.js';
import { metrics } from '../system/metrics.js';
import type { AppContext } from '../context.js';
import { ErrorSchema } from '../api/schemas.js';
import { eventPush, reconciliationReportPush } from './shared/kinds.js';
import { applyApiKey, applyRecordRejected } from './store/feed.js';

const Diff = Type.Object({
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  day: Type.String(),
  currency: Type.String(),
  measure: Type.String(),
  store_count: Type.Integer(),
  store_sum: Type.Integer(),
  central_count: Type.Integer(),
  central_sum: Type.Integer(),
});
const Nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer>>(t: T) => Type.Union([t, Type.Null()]);

export const SyncStatusSchema = Type.Object({
  role: Type.Union([Type.Literal('store'), Type.Literal('central')]),
  configured: Type.Boolean(),
  central_url: Nullable(Type.String()),
  central_pinned: Nullable(Type.String()),
  store_id: Nullable(Type.String()),
  connected: Type.Boolean(),
  link_down_since: Nullable(Type.String()),
  last_success_at: Nullable(Type.String()),
  last_pull_at: Nullable(Type.String()),
  records_waiting: Type.Integer(),
  oldest_waiting_at: Nullable(Type.String()),
  acked_seq: Type.Integer(),
  last_error: Nullable(Type.String()),
  last_error_at: Nullable(Type.String()),
  central_clock_offset_ms: Nullable(Type.Integer()),
  warnings: Type.Array(Type.String()),
  rejected_records: Type.Integer(),
  decisions: Type.Array(Type.Object({ record_id: Type.String(), kind: Type.String(), reason: Type.String(), decided_at: Type.String() })),
  held_records: Type.Integer(),
  parked_records: Type.Integer(),
  skipped_records: Type.Integer(),
  central: Type.Union([
    Type.Object({
      stores: Type.Integer(),
      silent: Type.Integer(),
      silent_stores: Type.Array(Type.Object({ store_id: Type.String(), since: Type.String() })),
      store_silent_ms: Type.Integer(),
      last_push_at: Nullable(Type.String()),
    }),
    Type.Null(),
  ]),
  alerts: Type.Array(Type.Object({ code: Type.String(), message: Type.String(), fix: Type.String() })),
  reconciliation: Type.Object({
    state: Type.Union([Type.Literal('never'), Type.Literal('equal'), Type.Literal('different')]),
    checked_at: Nullable(Type.String()),
    differences: Type.Array(Diff),
  }),
});

/**
 * Sync between a store and its central. On a central: the `/sync/...` protocol endpoints. On a
 * store: the push/pull worker. On both: `GET /sync/status` (any key of this box).
 */
export const syncModule: PosdModule = {
  name: 'sync',
  // The kinds of the engine itself; every other kind is declared by the module that owns it.
  sync: {
    push: { event: eventPush, reconciliation_report: reconciliationReportPush },
    feed: { api_key: applyApiKey, record_rejected: applyRecordRejected },
  },
  root(app, ctx) {
    if (ctx.config.role === 'central') {
      centralRoutes(app, ctx);
      centralRecordRoutes(app, ctx);
    }
    registerSyncMetrics(ctx);
    const authenticator = new Authenticator(accountsOf(ctx));
    app.get('/sync/status', { schema: { hide: true, response: { 200: SyncStatusSchema, 401: ErrorSchema } } }, async (req) => {
      const raw = req.headers['x-secret-key'];
      authenticator.authenticate(Array.isArray(raw) ? raw[0] : raw, undefined);
      return syncStatus(ctx.config, ctx.db, ctx.clock.now());
    });
  },
  workers(ctx) {
    provideStatus(ctx, { syncAlerts: () => syncStatus(ctx.config, ctx.db, ctx.clock.now()).alerts });
    if (ctx.config.role === 'central')
      provideStatus(ctx, {
        centralStores: (query) =>
          listStores(ctx.config, ctx.db, ctx.clock.now(), query, {
            names: accountNames(ctx),
            received: (id) => pgCoreOf(ctx)?.state.pgReceived.get(id),
          }),
      });
    if (ctx.config.role === 'store') {
      // A box that never joined a central shows the panel as "not configured".
      if (syncStatus(ctx.config, ctx.db).configured)
        provideStatus(ctx, {
          sync() {
            const st = syncStatus(ctx.config, ctx.db);
            return {
              connected: st.connected,
              last_success_at: st.last_success_at,
              records_waiting: st.records_waiting,
              oldest_waiting_at: st.oldest_waiting_at,
              last_error: st.last_error,
              last_error_at: st.last_error_at,
              central_pinned: st.central_pinned,
            };
          },
        });
      return [new SyncWorker(ctx)];
    }
    // The projector applies what pushes received, woken by each receipt; its slow timer also
    // finds records held for want of an applier (after an upgrade) and those an operator put back
    // with `posd sync retry` from another process.
    // With the sync tables on PostgreSQL this central is the chain's core: it also ingests what the
    // fronts received, reports outcomes and totals, and relays its feed (src/sync/central/pg-core.ts).
    return ctx.config.sync.postgres.url
      ? [projectorWorker(ctx), lazyPgCoreWorker(ctx, async () => (await import('./central/pg-core.js')).pgCoreWorker)]
      : [projectorWorker(ctx)];
  },
};

/** Account names by id: the stores filter matches them as well as store ids. */
function accountNames(ctx: AppContext): Record<string, string> {
  return Object.fromEntries(
    accountsOf(ctx)
      .accounts()
      .map((a) => [a.id, a.name ?? '']),
  );
}

/** Sync in /metrics, read at scrape time from the same status as doctor and the page. */
function registerSyncMetrics(ctx: AppContext): void {
  const m = metrics(ctx);
  registerStoreOutcomeMetrics(ctx);
  // One read per scrape for the four series.
  let memo: { at: number; status: SyncStatus } | undefined;
  const status = (): SyncStatus => {
    const now = Date.now();
    if (!memo || now - memo.at > 250) memo = { at: now, status: syncStatus(ctx.config, ctx.db, ctx.clock.now()) };
    return memo.status;
  };
  m.gauge({
    name: 'posd_sync_records',
    help: 'Sync records by state: waiting (store, not yet acknowledged by the central); held, parked and skipped (central)',
    labelNames: ['state'],
    collect() {
      const s = status();
      this.set({ state: 'waiting' }, s.records_waiting);
      this.set({ state: 'held' }, s.held_records);
      this.set({ state: 'parked' }, s.parked_records);
      this.set({ state: 'skipped' }, s.skipped_records);
    },
  });
  m.gauge({
    name: 'posd_sync_oldest_waiting_age_seconds',
    help: 'Age of the oldest record waiting for the central (0: none waiting)',
    collect() {
      const oldest = status().oldest_waiting_at;
      this.set(oldest ? Math.max(0, (ctx.clock.now() - Date.parse(oldest)) / 1000) : 0);
    },
  });
  m.gauge({
    name: 'posd_sync_last_success_timestamp_seconds',
    help: 'When the central last acknowledged a push (0: never)',
    collect() {
      const at = status().last_success_at;
      this.set(at ? Date.parse(at) / 1000 : 0);
    },
  });
  m.gauge({
    name: 'posd_sync_link_up',
    help: '1 while the central answers, 0 when it does not (store)',
    collect() {
      this.set(status().connected ? 1 : 0);
    },
  });
  if (ctx.config.role === 'central') {
    // One series per store box (its store id, never its account or name): 1,000 stores are 1,000
    // series, a few tens of KB per scrape (docs/decisions/0225-central-store-view.md). A store
    // that never pushed counts from when it joined.
    m.gauge({
      name: 'posd_sync_store_silence_seconds',
      help: "Central: seconds since each store box's last push (since it joined, if it never pushed)",
      labelNames: ['store'],
      collect() {
        this.reset();
        const now = ctx.clock.now();
        for (const s of centralSide(ctx.db).stores()) this.set({ store: s.store_id }, Math.round(silentFor(s, now) / 1000));
      },
    });
    m.gauge({
      name: 'posd_sync_stores',
      help: 'Central: store boxes by state (silent, attention, new, ok), as on the status page',
      labelNames: ['state'],
      collect() {
        const { counts } = listStores(ctx.config, ctx.db, ctx.clock.now(), { per_page: 1, state: 'silent' });
        for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
      },
    });
  }
  m.gauge({
    name: 'posd_sync_alerts',
    help: 'Sync alerts raised now, by code (sync_stalled, sync_link_down, sync_records_parked, sync_store_silent)',
    labelNames: ['code'],
    collect() {
      this.reset();
      for (const code of ['sync_stalled', 'sync_link_down', 'sync_records_parked', 'sync_store_silent']) this.set({ code }, 0);
      for (const a of status().alerts) this.set({ code: a.code }, 1);
    },
  });
}
