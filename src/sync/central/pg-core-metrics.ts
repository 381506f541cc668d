import type { AppContext } from '../../context.js';
import { metrics } from '../../system/metrics.js';
import type { PgCore } from './pg-core.js';

/**
 * The core's series on `/metrics` (docs/central.md, "One log"): the projector's lag over every store
 * and per store, in records and in seconds (the alerts `PosdStoreApplyLag` and `PosdStoreApplyBehind`
 * in deploy/prometheus-alerts.yml read them), whether
 * this core leads and runs its projector's thread, and its place in the central's log beside the log's end.
 */
export function registerCoreMetrics(ctx: AppContext, core: PgCore): void {
  const m = metrics(ctx);
  const leading = () => core.state.role === 'leader';
  m.gauge({
    name: 'posd_sync_projector_lag_records',
    help: 'Records received in PostgreSQL (by the fronts) and not yet applied by the core, over every store (0 on a standby)',
    collect() {
      this.set(leading() ? core.state.lag.records : 0);
    },
  });
  m.gauge({
    name: 'posd_sync_projector_lag_stores',
    help: 'Stores with records received in PostgreSQL and not yet applied by the core',
    collect() {
      this.set(leading() ? core.state.lag.stores : 0);
    },
  });
  m.gauge({
    name: 'posd_sync_store_lag_records',
    help: 'Per store: records received in PostgreSQL and not yet applied by the leading core (stores behind only; refreshed each second)',
    labelNames: ['store_id'],
    collect() {
      this.reset();
      if (!leading()) return;
      for (const [store, lag] of core.state.lag.perStore) this.set({ store_id: store }, lag);
    },
  });
  m.gauge({
    name: 'posd_sync_store_lag_seconds',
    help: 'Per store: how long its oldest record received in PostgreSQL has waited for the leading core to apply it (stores behind only; refreshed each second)',
    labelNames: ['store_id'],
    collect() {
      this.reset();
      if (!leading()) return;
      for (const [store, seconds] of core.state.lag.secondsPerStore) this.set({ store_id: store }, seconds);
    },
  });
  m.gauge({
    name: 'posd_sync_projector_leader',
    help: '1 while this core holds the projector lease (it projects and publishes to PostgreSQL), 0 on a standby',
    collect() {
      this.set(leading() ? 1 : 0);
    },
  });
  m.gauge({
    name: 'posd_sync_projector_thread',
    help: "1 while the leading core's projector runs on its own thread (off the event loop that answers /api), 0 otherwise",
    collect() {
      this.set(core.log_.state.thread ? 1 : 0);
    },
  });
  m.gauge({
    name: 'posd_central_log_thread_entries',
    help: "Entries of the central's log this core's projector thread committed since the process started (its slices; the appender sends them)",
    collect() {
      this.set(core.log_.state.threadAppended);
    },
  });
  m.gauge({
    name: 'posd_central_log_position',
    help: "This core's place in the central's log on PostgreSQL (the last entry it appended or replayed)",
    collect() {
      this.set(core.log_.state.position);
    },
  });
  m.gauge({
    name: 'posd_central_log_behind',
    help: "Entries of the central's log this core has not replayed yet (a standby's lag; 0 on the leader), as of its last look",
    collect() {
      this.set(Math.max(0, core.log_.state.end - core.log_.state.position));
    },
  });
}
