import type { PosdModule } from '../../api/module.js';
import { opsRoutes } from './routes.js';
import { NightlyBackup } from './nightly-backup.js';
import { provideBuiltInSources } from './sources.js';
import { registerAreaMetrics } from './area-metrics.js';
import { offlineApiRoutes } from './offline-api.js';
import { AlertNotifier } from './alerts.js';
import { OutageReporter, outageWindowPush } from './outage-sync.js';

export { metrics, type Metrics } from '../../system/metrics.js';
export { provideStatus, statusSources, type StatusSources } from '../../system/status-sources.js';
export { backupDatabase, inspectDatabase, backupDir } from '../../system/backup.js';
export { runningDaemon } from '../../system/daemon-lock.js';

/** Operations: the manager's status page, /metrics, the nightly backup and the alerts sent to the manager. */
export const opsModule: PosdModule = {
  name: 'ops',
  // Stored (offline) card payments through /api: what the page shows, and the policy's changes by a named manager.
  api: offlineApiRoutes,
  root: (app, ctx) => {
    // Money and terminals are part of every build: their read functions feed their panels. Other
    // areas register their own with provideStatus when they are installed.
    provideBuiltInSources(ctx);
    registerAreaMetrics(ctx);
    return opsRoutes(app, ctx);
  },
  workers: (ctx) => {
    const alerts = new AlertNotifier(ctx);
    return [
      ...(ctx.config.backup.hour >= 0 ? [new NightlyBackup(ctx)] : []),
      ...(alerts.enabled() ? [alerts] : []),
      // A store tells its central of each outage window once it ends (ops/outage-sync.ts).
      ...(ctx.config.role === 'store' ? [new OutageReporter(ctx)] : []),
    ];
  },
  // A store's ended outage windows, kept by its central for the reports across stores.
  sync: { push: { outage_window: outageWindowPush } },
};
