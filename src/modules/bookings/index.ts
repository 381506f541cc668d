import type { PosdModule } from '../../api/module.js';
import { setSchedulingDeps } from './deps.js';
import { holdsWorker } from './holds.js';
import { moneyPort } from './money-adapter.js';
import { bookingPageRoutes } from './page.js';
import { bookingRoutes } from './routes.js';

export const bookingsModule: PosdModule = {
  name: 'bookings',
  api(app, ctx) {
    setSchedulingDeps(ctx, { money: moneyPort });
    bookingRoutes(app, ctx);
  },
  root: bookingPageRoutes,
  workers: (ctx) => [holdsWorker(ctx)],
};
