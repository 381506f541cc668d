/**
 * The store's side of outage windows at the central (issue 36, decision 0211): each window is
 * written as an `outage_window` record once it has ended (never while open), once; a blip of the
 * central link under a minute is not, unless a processor window overlaps it (the box's own report
 * lists it then, merged); the worker does it on its own every two seconds of the box's clock.
 */
import { afterEach, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { until } from '../helpers/until.js';
import { tx } from '../../src/db/database.js';
import { storeSide } from '../../src/sync/store/sync-store.js';
import { REPORT_EVERY_MS, reportOutageWindows } from '../../src/modules/ops/outage-sync.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const T0 = Date.parse('2026-03-02T10:00:00.000Z');
const iso = (s: number) => new Date(T0 + s * 1000).toISOString();

it('writes one record per ended window, skips a lone blip of the central link, and does it on its own', async () => {
  const clock = new ManualClock(T0 + 3600_000);
  server = await startTestServer({ clock });
  const { ctx } = server.daemon;
  const store = storeSide(ctx.db);
  const records = () =>
    (ctx.db.prepare("SELECT payload FROM sync_outbox WHERE kind = 'outage_window' ORDER BY seq").all() as Array<{ payload: string }>).map((r) =>
      JSON.parse(r.payload),
    );
  const report = () => tx(ctx.db, () => reportOutageWindows(ctx));

  tx(ctx.db, () => {
    // A 30 s blip of the central link alone; a 2-minute outage of it.
    store.openOutage('central', iso(0));
    store.closeOutage('central', iso(30));
    store.openOutage('central', iso(100));
    store.closeOutage('central', iso(220));
    // A 20 s blip while the processor is down (still open): reported, the box's report merges it.
    store.openOutage('processor', iso(300));
    store.openOutage('central', iso(310));
    store.closeOutage('central', iso(330));
  });
  expect(report()).toBe(2);
  expect(records()).toEqual([
    { link: 'central', started_at: iso(100), ended_at: iso(220), taken_offline: [] },
    { link: 'central', started_at: iso(310), ended_at: iso(330), taken_offline: [] },
  ]);
  // Each once: the blip is marked too, and nothing is written again.
  expect(report()).toBe(0);
  expect(ctx.db.prepare('SELECT count(*) AS n FROM outage_windows WHERE reported = 0 AND ended_at IS NOT NULL').get()).toEqual({ n: 0 });

  // The processor window ends: the worker writes it by itself within its period, nothing taken offline (no card stored).
  tx(ctx.db, () => store.closeOutage('processor', iso(400)));
  clock.advance(REPORT_EVERY_MS);
  await until('the worker wrote the processor window', () => records().length === 3);
  expect(records()[2]).toEqual({ link: 'processor', started_at: iso(300), ended_at: iso(400), taken_offline: [] });
});
