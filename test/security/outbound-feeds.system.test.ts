import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { setFeedTrust, syncDueFeeds, syncFeed } from '../../src/modules/calendar-feeds/service.js';
import { setOutboundResolver, type ResolvedAddress } from '../../src/system/url-guard.js';
import { ok, rows } from '../scheduling/helpers.js';
import { startCalendarPeer, type CalendarPeer } from '../scheduling/tls-peer.js';

// Issue 17, hole 1: a calendar feed is a URL fetched on an account's word, so it goes through the
// outbound guard: refused at creation, re-checked on the address the socket uses, errors that say
// nothing about what is inside.
const clock = new ManualClock(Date.parse('2026-03-02T08:00:00.000Z'));
let s: TestServer;
let peer: CalendarPeer;
let unit: any;
/** What `rebind.example` resolves to: public when the feed is created, loopback when it is read. */
let rebindTo: ResolvedAddress[] = [{ address: '203.0.113.10', family: 4 }];

beforeAll(async () => {
  // No allow-list: loopback is refused as on a real box.
  s = await startTestServer({ clock, config: { scheduling: { sweep_interval_ms: 3_600_000 } } });
  peer = await startCalendarPeer();
  peer.respond = { status: 200, body: 'BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n' };
  setOutboundResolver(s.daemon.ctx, async (host) => {
    if (host === 'rebind.example') return rebindTo;
    if (host === 'localhost') return [{ address: '127.0.0.1', family: 4 }];
    throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  });
  setFeedTrust(s.daemon.ctx, peer.ca);
  const roomType = await ok(s.api('POST', '/services', { body: { kind: 'lodging', name: 'Double room', price_in_cents: 50_000, max_guests: 2 } }));
  unit = await ok(s.api('POST', '/resources', { body: { name: 'Room 1', room_type_id: roomType.id } }));
});
afterAll(async () => {
  await s.stop();
  await peer.close();
});

describe('calendar feeds behind the outbound guard', () => {
  it('refuses loopback, private, link-local and metadata URLs at creation, saying nothing of what is there', async () => {
    const port = new URL(peer.url).port;
    for (const url of [
      `${peer.url}/x.ics`,
      `https://127.0.0.1:1/x.ics`,
      `https://localhost:${port}/x.ics`,
      'https://[::1]/x.ics',
      'https://[::ffff:127.0.0.1]/x.ics',
      'https://169.254.169.254/latest/meta-data',
      'https://10.0.0.1/x.ics',
      'https://192.168.1.1/x.ics',
    ]) {
      const r = await s.api('POST', `/resources/${unit.id}/ical_feeds`, { body: { label: 'x', url } });
      expect(r.status, url).toBe(422);
      expect(r.body.code).toBe('invalid_feed_url');
      expect(r.text).not.toMatch(/127\.0\.0\.1|ECONN|refused by peer/);
    }
    // An open port and a closed one get the very same answer: no port scanner.
    const open = await s.api('POST', `/resources/${unit.id}/ical_feeds`, { body: { label: 'x', url: `${peer.url}/x.ics` } });
    const closed = await s.api('POST', `/resources/${unit.id}/ical_feeds`, { body: { label: 'x', url: 'https://127.0.0.1:1/x.ics' } });
    expect(open.text).toBe(closed.text);
    expect(rows(s, 'SELECT count(*) AS n FROM sched_ical_feeds')[0].n).toBe(0);
    expect(peer.hits).toBe(0);
  });

  it('re-checks at connect time, after DNS: a name that turns inward is not followed (rebinding)', async () => {
    const port = new URL(peer.url).port;
    const feed = await ok(s.api('POST', `/resources/${unit.id}/ical_feeds`, { body: { label: 'Rebind', url: `https://rebind.example:${port}/x.ics` } }));
    rebindTo = [{ address: '127.0.0.1', family: 4 }];
    expect(await syncDueFeeds(s.daemon.ctx)).toBe(1);
    expect(peer.hits).toBe(0);
    const [read] = await ok(s.api('GET', `/resources/${unit.id}/ical_feeds`), 200);
    expect(read.id).toBe(feed.id);
    expect(read.last_error).toBe('address_refused: the host is a private, local or metadata address');
    expect(read.last_synced_at).toBeNull();
  });

  it('a stored feed naming a literal inward address (made before the guard) is refused at every read, open port or closed', async () => {
    const insert = (url: string) => {
      const id = `feed_legacy${Math.random().toString(36).slice(2, 10)}`;
      s.daemon.ctx.db
        .prepare(
          `INSERT INTO sched_ical_feeds (id, account_id, live_mode, resource_id, label, url, next_sync_at, created_at) SELECT ?, account_id, live_mode, id, 'old', ?, '2000-01-01T00:00:00.000Z', '2000-01-01T00:00:00.000Z' FROM sched_resources WHERE id = ?`,
        )
        .run(id, url, unit.id);
      return rows(s, 'SELECT * FROM sched_ical_feeds WHERE id = ?', id)[0];
    };
    const open = await syncFeed(s.daemon.ctx, insert(`${peer.url}/x.ics`));
    const closed = await syncFeed(s.daemon.ctx, insert('https://127.0.0.1:1/x.ics'));
    expect(peer.hits).toBe(0);
    expect(open.last_error).toBe('address_refused: the host is a private, local or metadata address');
    expect(closed.last_error).toBe(open.last_error);
  });
});
