import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { setFeedTrust, syncDueFeeds } from '../../src/modules/calendar-feeds/service.js';
import { blockedNights } from '../../src/modules/calendar-feeds/ical.js';
import { ok, pay, rows } from './helpers.js';
import { startCalendarPeer, type CalendarPeer } from './tls-peer.js';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const clock = new ManualClock(Date.parse('2026-03-02T08:00:00.000Z'));
let s: TestServer;
let peer: CalendarPeer;
let roomType: any;
let unitA: any;
let unitB: any;
const guest = { name: 'Ana Pérez', email: 'ana@example.com' };

beforeAll(async () => {
  // The workers' own timers stay out of the way: the test drives every pass with the clock.
  // The peer listens on loopback, which the outbound guard refuses unless allow-listed.
  s = await startTestServer({ clock, config: { scheduling: { sweep_interval_ms: 3_600_000 }, webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
  peer = await startCalendarPeer();
  setFeedTrust(s.daemon.ctx, peer.ca);
  roomType = await ok(s.api('POST', '/services', { body: { kind: 'lodging', name: 'Double room', price_in_cents: 50_000, max_guests: 2 } }));
  unitA = await ok(s.api('POST', '/resources', { body: { name: 'Room 1', room_type_id: roomType.id } }));
  unitB = await ok(s.api('POST', '/resources', { body: { name: 'Room 2', room_type_id: roomType.id } }));
});
afterAll(async () => {
  await s.stop();
  await peer.close();
});

const stay = (checkIn: string, checkOut: string, extra: Record<string, unknown> = {}) =>
  s.api('POST', '/bookings', {
    body: { stay: { room_type_id: roomType.id, check_in_on: checkIn, check_out_on: checkOut, guests: 2, ...extra }, customer: guest },
  });

describe('lodging stays', () => {
  it('books nights in a unit of the room type; the next request for the same nights gets the other unit, then none', async () => {
    expect(unitA).toMatchObject({ kind: 'lodging_unit', room_type_id: roomType.id });
    const first = await ok(stay('2026-05-01', '2026-05-04'));
    expect(first).toMatchObject({
      kind: 'stay',
      status: 'confirmed',
      total_in_cents: 150_000,
      starts_at: '2026-05-01T00:00:00.000Z',
      ends_at: '2026-05-04T00:00:00.000Z',
    });
    expect(first.stay).toMatchObject({
      room_type_id: roomType.id,
      unit_id: unitA.id,
      unit_name: 'Room 1',
      nights: 3,
      guests: 2,
      registered_guests: [],
      service_tab_id: null,
    });
    expect(first.segments).toEqual([expect.objectContaining({ kind: 'stay', resource_id: unitA.id })]);
    expect((await ok(stay('2026-05-03', '2026-05-05'))).stay.unit_id).toBe(unitB.id);
    expect((await stay('2026-05-03', '2026-05-04')).body.code).toBe('slot_unavailable');
    // Check-out day is free for the next check-in.
    expect((await ok(stay('2026-05-04', '2026-05-06', { unit_id: unitA.id }))).stay.unit_id).toBe(unitA.id);
    const tooMany = await stay('2026-06-01', '2026-06-02', { guests: 3 });
    expect(tooMany.status).toBe(400);
    expect((await stay('2026-06-02', '2026-06-01')).status).toBe(400);
  });

  it('guest registry and the service tab opened at check-in', async () => {
    const b = await ok(stay('2026-03-02', '2026-03-03', { unit_id: unitB.id }));
    const reg = await ok(
      s.api('POST', `/bookings/${b.id}/guests`, { body: { guests: [{ name: 'Ana Pérez', document: 'DPI 1234 56789 0101', nationality: 'GT' }] } }),
    );
    expect(reg.stay.registered_guests).toEqual([{ name: 'Ana Pérez', document: 'DPI 1234 56789 0101', nationality: 'GT' }]);
    expect(reg.stay.guests_registered_at).toBe('2026-03-02T08:00:00.000Z');
    const over = await s.api('POST', `/bookings/${b.id}/guests`, {
      body: {
        guests: [
          { name: 'B', document: '1', nationality: 'GT' },
          { name: 'C', document: '2', nationality: 'MX' },
        ],
      },
    });
    expect(over.status).toBe(400);
    const bad = await s.api('POST', `/bookings/${b.id}/guests`, { body: { guests: [{ name: 'B' }] } });
    expect(bad.status).toBe(400);

    const checkedIn = await ok(s.api('POST', `/bookings/${b.id}/check_in`));
    expect(checkedIn.status).toBe('checked_in');
    const tabId = checkedIn.stay.service_tab_id;
    expect(tabId).toMatch(/^tab_/);
    await ok(s.api('POST', `/service_tabs/${tabId}/items`, { body: { name: 'Minibar', amount_in_cents: 2_500, quantity: 2 } }));
    const closed = await ok(s.api('POST', `/service_tabs/${tabId}/close`));
    expect(closed).toMatchObject({ status: 'closed', total_in_cents: 5_000 });
    const co = await ok(s.api('GET', `/checkouts/${closed.checkout_id}`), 200);
    expect(co.amount_in_cents).toBe(5_000);
    expect((await s.api('POST', `/service_tabs/${tabId}/items`, { body: { name: 'Late', amount_in_cents: 100 } })).body.code).toBe('booking_state_invalid');
  });

  it('a stay with a full payment is confirmed once paid', async () => {
    const b = await ok(
      s.api('POST', '/bookings', {
        body: {
          stay: { room_type_id: roomType.id, check_in_on: '2026-07-01', check_out_on: '2026-07-03', guests: 1 },
          customer: guest,
          payment_policy: 'full',
        },
      }),
    );
    expect(b.status).toBe('pending');
    await pay(s, b.checkout_id);
    expect(await ok(s.api('GET', `/bookings/${b.id}`), 200)).toMatchObject({ status: 'confirmed', paid_in_cents: 100_000, balance_in_cents: 0 });
  });
});

describe('calendar feeds', () => {
  it('only https URLs (422 otherwise)', async () => {
    const r = await s.api('POST', `/resources/${unitA.id}/ical_feeds`, { body: { label: 'Airbnb', url: 'http://example.com/cal.ics' } });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('invalid_feed_url');
    expect((await s.api('POST', `/resources/${unitA.id}/ical_feeds`, { body: { label: 'Airbnb', url: 'not a url' } })).status).toBe(422);
    expect((await s.api('POST', `/resources/${unitA.id}/ical_feeds`, { body: { label: 'Airbnb' } })).status).toBe(400);
    expect(rows(s, 'SELECT count(*) AS n FROM sched_ical_feeds')[0].n).toBe(0);
  });

  it('reads a feed over https, blocks its nights, keeps them when the feed fails, and refreshes every 15 minutes', async () => {
    peer.respond = { status: 200, body: fixture('airbnb.ics') };
    const feed = await ok(s.api('POST', `/resources/${unitA.id}/ical_feeds`, { body: { label: 'Airbnb', url: `${peer.url}/calendar/ical/123.ics?s=abc` } }));
    expect(feed).toMatchObject({ resource_id: unitA.id, label: 'Airbnb', last_synced_at: null, last_error: null });
    expect(feed.id).toMatch(/^feed_/);
    expect(await syncDueFeeds(s.daemon.ctx)).toBe(1);
    const [read] = await ok(s.api('GET', `/resources/${unitA.id}/ical_feeds`), 200);
    expect(read).toMatchObject({ last_synced_at: '2026-03-02T08:00:00.000Z', last_error: null });
    expect(rows(s, 'SELECT start_on, end_on FROM sched_feed_blocks WHERE feed_id = ? ORDER BY start_on', feed.id)).toEqual([
      { start_on: '2026-03-12', end_on: '2026-03-15' },
      { start_on: '2026-03-20', end_on: '2026-03-21' },
    ]);
    // Unit A is blocked on the 13th: the stay goes to unit B; asking for A itself is refused.
    expect((await stay('2026-03-13', '2026-03-14', { unit_id: unitA.id })).body.code).toBe('slot_unavailable');
    expect((await ok(stay('2026-03-13', '2026-03-14'))).stay.unit_id).toBe(unitB.id);
    expect((await stay('2026-03-13', '2026-03-14')).body.code).toBe('slot_unavailable');
    expect((await ok(stay('2026-03-15', '2026-03-16', { unit_id: unitA.id }))).stay.unit_id).toBe(unitA.id);

    // Not due again before 15 minutes.
    clock.advance(14 * 60_000);
    expect(await syncDueFeeds(s.daemon.ctx)).toBe(0);
    // The peer fails: the blocks stay, the error is recorded.
    peer.respond = { status: 503, body: 'busy' };
    clock.advance(60_000);
    expect(await syncDueFeeds(s.daemon.ctx)).toBe(1);
    let [failed] = await ok(s.api('GET', `/resources/${unitA.id}/ical_feeds`), 200);
    expect(failed).toMatchObject({ last_synced_at: '2026-03-02T08:00:00.000Z', last_error: 'HTTP 503' });
    expect((await stay('2026-03-12', '2026-03-13', { unit_id: unitA.id })).body.code).toBe('slot_unavailable');
    // A 200 that is not iCalendar is a failure too.
    peer.respond = { status: 200, body: '<html>maintenance</html>' };
    clock.advance(15 * 60_000);
    await syncDueFeeds(s.daemon.ctx);
    [failed] = await ok(s.api('GET', `/resources/${unitA.id}/ical_feeds`), 200);
    expect(failed.last_error).toBeTruthy();
    expect(failed.last_error).not.toBe('HTTP 503');
    expect(rows(s, 'SELECT count(*) AS n FROM sched_feed_blocks WHERE feed_id = ?', feed.id)[0].n).toBe(2);

    // Back with a new calendar (time zones and a recurring block): the blocks are replaced.
    peer.respond = { status: 200, body: fixture('google-tz-rrule.ics') };
    clock.advance(15 * 60_000);
    await syncDueFeeds(s.daemon.ctx);
    const [good] = await ok(s.api('GET', `/resources/${unitA.id}/ical_feeds`), 200);
    expect(good.last_error).toBeNull();
    expect(good.last_synced_at).toBe('2026-03-02T08:45:00.000Z');
    expect((await ok(stay('2026-03-12', '2026-03-13', { unit_id: unitA.id }))).stay.unit_id).toBe(unitA.id);
    expect((await stay('2026-03-23', '2026-03-24', { unit_id: unitA.id })).body.code).toBe('slot_unavailable');
    expect((await ok(stay('2026-03-16', '2026-03-17', { unit_id: unitA.id }))).stay.unit_id).toBe(unitA.id);
    expect((await ok(stay('2026-03-31', '2026-04-01', { unit_id: unitA.id }))).stay.unit_id).toBe(unitA.id);
    expect(peer.hits).toBe(4);
  });

  it('a peer whose certificate is not trusted is a failing feed, not a crash', async () => {
    const { syncFeed } = await import('../../src/modules/calendar-feeds/service.js');
    const feed = await ok(s.api('POST', `/resources/${unitB.id}/ical_feeds`, { body: { label: 'Other', url: `${peer.url}/other.ics` } }));
    setFeedTrust(s.daemon.ctx, undefined);
    const row = rows(s, 'SELECT * FROM sched_ical_feeds WHERE id = ?', feed.id)[0];
    const after = await syncFeed(s.daemon.ctx, row);
    expect(after.last_error).toMatch(/certificate|self.signed/i);
    expect(after.last_synced_at).toBeNull();
    setFeedTrust(s.daemon.ctx, peer.ca);
  });

  it("publishes each unit's own nights at a public .ics URL with a secret token, no guest data", async () => {
    const res = unitA.calendar_url as string;
    expect(res).toMatch(new RegExp(`/calendars/${unitA.id}/[0-9A-Za-z]{32}\\.ics$`));
    const path = new URL(res).pathname;
    const r = await request(`${s.url}${path}`);
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toContain('text/calendar');
    const text = await r.body.text();
    expect(text).not.toContain(guest.name);
    expect(text).not.toContain(guest.email);
    const nights = blockedNights(text, '2026-03-01', '2026-12-31').map((b) => [b.startOn, b.endOn]);
    expect(nights).toContainEqual(['2026-05-01', '2026-05-04']);
    expect(nights).toContainEqual(['2026-03-15', '2026-03-16']);
    // Nights imported from other platforms are not echoed back to them.
    expect(nights).not.toContainEqual(['2026-03-23', '2026-03-24']);
    const wrong = await request(`${s.url}/calendars/${unitA.id}/${'x'.repeat(32)}.ics`);
    expect(wrong.statusCode).toBe(404);
    await wrong.body.dump();
  });
});
