import type { PosdModule } from '../../api/module.js';
import { opsRoutes } from './routes.js';
import { NightlyBackup } from './nightly-backup.js';
import { provideStatus, statusSources } from './status-sources.js';
import { salesByMethod } from '../intents/service.js';

export { metrics, type Metrics } from './metrics.js';
export { provideStatus, statusSources, type StatusSources } from './status-sources.js';
export { backupDatabase, inspectDatabase, backupDir } from './backup.js';
export { runningDaemon } from './daemon-lock.js';

/** Operations: the manager's status page, /metrics and the nightly backup. */
export const opsModule: PosdModule = {
  name: 'ops',
  root: (app, ctx) => {
    // Money is part of every build: its read function feeds "today's sales". Other areas register
    // their own panels with provideStatus when they are installed.
    if (!statusSources(ctx).salesBetween) provideStatus(ctx, { salesBetween: (from, until) => salesByMethod(ctx, from, until) });
    return opsRoutes(app, ctx);
  },
  workers: (ctx) => (ctx.config.backup.hour >= 0 ? [new NightlyBackup(ctx)] : []),
};
