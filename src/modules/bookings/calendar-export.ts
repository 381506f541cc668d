import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { resourceByCalendarToken } from '../bookables/service.js';
import { unitCalendar } from '../calendar-feeds/service.js';
import { unitNights } from './service.js';

/**
 * The unit's own calendar, public and unauthenticated (other platforms poll it to block the nights
 * sold here), at `/calendars/<resource id>/<secret token>.ics`. Whoever holds the URL sees which
 * nights are taken and nothing else: no names, no amounts.
 */
export function calendarExportRoutes(app: ApiApp, ctx: AppContext): void {
  app.get(
    '/calendars/:id/:file',
    { schema: { hide: true, params: Type.Object({ id: Type.String({ maxLength: 64 }), file: Type.String({ maxLength: 80 }) }) } },
    async (req, reply) => {
      const m = /^([0-9A-Za-z]+)\.ics$/.exec(req.params.file);
      const unit = m ? resourceByCalendarToken(ctx, req.params.id, m[1]) : undefined;
      if (!unit) return reply.code(404).send({ message: 'No such calendar.' });
      const now = ctx.clock.now();
      // A month back, so a platform that reads late still sees the stay in progress.
      const fromOn = isoTime(now - 31 * 86_400_000).slice(0, 10);
      const body = await unitCalendar({ unitId: unit.id, unitName: unit.name, nights: unitNights(ctx, unit.id, fromOn), now: new Date(now) });
      return reply.header('content-type', 'text/calendar; charset=utf-8').header('cache-control', 'no-store').send(body);
    },
  );
}
