import type { PosdModule } from '../../api/module.js';
import { feedRoutes } from './routes.js';
import { feedsWorker } from './service.js';

export const calendarFeedsModule: PosdModule = {
  name: 'calendar-feeds',
  api: feedRoutes,
  workers: (ctx) => [feedsWorker(ctx)],
};
