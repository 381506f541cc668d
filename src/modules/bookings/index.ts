import type { PosdModule } from '../../api/module.js';
import { attachSchedulingDeps } from './deps.js';
import { holdsWorker } from './holds.js';
import { moneyPort } from './money-adapter.js';
import type { MoneyPort } from './money-port.js';
import { bookingPageRoutes } from './page.js';
import { calendarExportRoutes } from './calendar-export.js';
import { bookingRoutes } from './routes.js';
import { classSessionRoutes } from './class-sessions/routes.js';
import { classSessionFeed } from './class-sessions/feed.js';
import { bookingFeed } from './feed.js';
import { applyBookingRejection, bookingPush } from './sync.js';

/**
 * The bookings module. `money` replaces the way into the money modules (tests inject faults at
 * that boundary with it).
 */
export function createBookingsModule(opts: { money?: MoneyPort } = {}): PosdModule {
  const deps = { money: opts.money ?? moneyPort };
  return {
    name: 'bookings',
    api(app, ctx) {
      attachSchedulingDeps(ctx, deps);
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
}

export const bookingsModule = createBookingsModule();
