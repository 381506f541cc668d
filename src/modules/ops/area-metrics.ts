import type { AppContext } from '../../context.js';
import { metrics } from '../../system/metrics.js';
import { statusSources } from '../../system/status-sources.js';
import { lastBackupRun, syncOutboxSummary } from './store.js';

/**
 * Gauges read at scrape time from the same read functions as the status page, so /metrics and the
 * page never disagree: terminals by availability, commands in flight by state, facts recorded for
 * the central, the last good backup (from the backup log, so one `posd backup` took in another
 * process counts as well as the nightly one). Areas with their own counters (delivery attempts, sync lag) register them with
 * `metrics(ctx)` themselves.
 */
export function registerAreaMetrics(ctx: AppContext): void {
  const m = metrics(ctx);
  m.gauge({
    name: 'posd_terminals',
    help: 'Registered terminals by availability',
    labelNames: ['availability'],
    collect() {
      const list = statusSources(ctx).terminals?.();
      if (!list) return;
      const up = list.filter((t) => t.available).length;
      this.set({ availability: 'available' }, up);
      this.set({ availability: 'unavailable' }, list.length - up);
    },
  });
  m.gauge({
    name: 'posd_terminal_commands_in_flight',
    help: 'Terminal session commands not yet final, by state',
    labelNames: ['state'],
    collect() {
      const list = statusSources(ctx).commandsInFlight?.();
      if (!list) return;
      this.reset();
      for (const state of ['pending', 'dispatched', 'cancel_requested']) this.set({ state }, 0);
      for (const c of list) this.inc({ state: c.state });
    },
  });
  m.gauge({
    name: 'posd_sync_outbox_records',
    help: 'Facts recorded for the central in the local sync outbox',
    collect() {
      this.set(syncOutboxSummary(ctx.db).count);
    },
  });
  m.gauge({
    name: 'posd_backup_last_success_timestamp_seconds',
    help: 'When the last successful backup (nightly or posd backup) finished; 0: none yet',
    collect() {
      const last = lastBackupRun(ctx.db, true);
      this.set(last ? Date.parse(last.finished_at) / 1000 : 0);
    },
  });
}
