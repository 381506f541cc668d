import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import { isoTime } from '../../clock.js';
import { errorResponses } from '../bookables/routes.js';
import { resourceByCalendarToken } from '../bookables/service.js';
import { unitNights } from '../bookings/service.js';
import { createFeed, feedsOfResource, feedView } from './service.js';
import { unitCalendar } from './ical.js';
import { IdParams, Nullable } from '../../api/schemas.js';

const FeedSchema = Type.Object({
  id: Type.String(),
  resource_id: Type.String(),
  label: Type.String(),
  url: Type.String(),
  last_synced_at: Nullable(Type.String()),
  last_error: Nullable(Type.String()),
  created_at: Type.String(),
});
const FeedBody = Type.Object({ label: Type.String({ minLength: 1, maxLength: 200 }), url: Type.String({ minLength: 1, maxLength: 2000 }) });

export function feedRoutes(app: ApiApp, ctx: AppContext): void {
  const tags = ['scheduling'];
  app.post('/resources/:id/ical_feeds', { schema: { tags, params: IdParams, body: FeedBody, response: { 201: FeedSchema, ...errorResponses } } }, async (req, reply) =>
    reply.code(201).send(feedView(createFeed(ctx, requireAccount(req), req.params.id, req.body))),
  );
  app.get('/resources/:id/ical_feeds', { schema: { tags, params: IdParams, response: { 200: Type.Array(FeedSchema), ...errorResponses } } }, async (req) =>
    feedsOfResource(ctx, requireAccount(req), req.params.id).map(feedView),
  );
}

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
      const body = unitCalendar({ unitId: unit.id, unitName: unit.name, nights: unitNights(ctx, unit.id, fromOn), now: new Date(now) });
      return reply.header('content-type', 'text/calendar; charset=utf-8').header('cache-control', 'no-store').send(body);
    },
  );
}
