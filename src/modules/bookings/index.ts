import type { PosdModule } from '../../api/module.js';
import { setSchedulingDeps } from './deps.js';
import { holdsWorker } from './holds.js';
import { moneyPort } from './money-adapter.js';
import { bookingPageRoutes } from './page.js';
import { calendarExportRoutes } from './calendar-export.js';
import { bookingRoutes } from './routes.js';
import { classSessionRoutes } from './class-sessions/routes.js';
import { classSessionFeed } from './class-sessions/feed.js';
import { bookingFeed } from './feed.js';
import { applyBookingRejection, bookingPush } from './sync.js';

export const bookingsModule: PosdModule = {
  name: 'bookings',
  api(app, ctx) {
    setSchedulingDeps(ctx, { money: moneyPort });
    bookingRoutes(app, ctx);
    classSessionRoutes(app, ctx);
  },
  root(app, ctx) {
    bookingPageRoutes(app, ctx);
    calendarExportRoutes(app, ctx);
  },
  workers: (ctx) => [holdsWorker(ctx)],
  sync: {
    push: { booking: bookingPush },
    feed: { booking: bookingFeed, class_session: classSessionFeed },
    rejections: { booking: applyBookingRejection },
  },
};
