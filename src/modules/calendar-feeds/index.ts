import type { PosdModule } from '../../api/module.js';
import { calendarExportRoutes, feedRoutes } from './routes.js';
import { feedsWorker } from './service.js';

export const calendarFeedsModule: PosdModule = {
  name: 'calendar-feeds',
  api: feedRoutes,
  root: calendarExportRoutes,
  workers: (ctx) => [feedsWorker(ctx)],
};
