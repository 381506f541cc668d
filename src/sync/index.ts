import { provideStatus } from '../system/status-sources.js';
import { Type } from '@sinclair/typebox';
import type { PosdModule } from '../api/module.js';
import { Authenticator } from '../api/auth.js';
import { accountsOf } from '../accounts/service.js';
import { centralRoutes } from './central.js';
import { SyncWorker } from './client.js';
import { applyHeldRecords } from './central-service.js';
import { syncStatus } from './status.js';
import { ErrorSchema } from '../api/schemas.js';
import { eventPush, reconciliationReportPush } from './kinds.js';
import { applyApiKey, applyRecordRejected } from './feed.js';

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
  store_id: Nullable(Type.String()),
  connected: Type.Boolean(),
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
    if (ctx.config.role === 'central') centralRoutes(app, ctx);
    const authenticator = new Authenticator(accountsOf(ctx));
    app.get(
      '/sync/status',
      { schema: { hide: true, response: { 200: SyncStatusSchema, 401: ErrorSchema } } },
      async (req) => {
        const raw = req.headers['x-secret-key'];
        authenticator.authenticate(Array.isArray(raw) ? raw[0] : raw, undefined);
        return syncStatus(ctx.config, ctx.db);
      },
    );
  },
  workers(ctx) {
    if (ctx.config.role === 'store') {
      // A box that never joined a central shows the panel as "not configured".
      if (syncStatus(ctx.config, ctx.db).configured) provideStatus(ctx, {
        sync() {
          const st = syncStatus(ctx.config, ctx.db);
          return {
            connected: st.connected,
            last_success_at: st.last_success_at,
            records_waiting: st.records_waiting,
            oldest_waiting_at: st.oldest_waiting_at,
            last_error: st.last_error,
          };
        },
      });
      return [new SyncWorker(ctx)];
    }
    // After an upgrade, records held for want of an applier are applied, in the order they came.
    return [
      {
        name: 'sync-held',
        start() {
          const n = applyHeldRecords(ctx);
          if (n) ctx.log.info({ records: n }, 'sync: applied records held for an applier');
        },
        stop() {},
      },
    ];
  },
};
