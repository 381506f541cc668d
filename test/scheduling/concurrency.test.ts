import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { customer, ok, rows, salon } from './helpers.js';

const clock = new ManualClock(Date.parse('2026-03-02T08:00:00.000Z'));
let s: TestServer;
let cat: Awaited<ReturnType<typeof salon>>;

// The per-key limit (60/s) would answer 429 to part of a burst; the burst is what is under test.
beforeAll(async () => {
  s = await startTestServer({ clock, config: { limits: { per_key_per_second: 10_000 } } });
  cat = await salon(s);
});
afterAll(() => s.stop());

describe('no double booking under concurrent requests', () => {
  it('many parallel requests for one stylist slot: exactly one 201, the rest 422 slot_unavailable', async () => {
    const N = 40;
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        s.api('POST', '/bookings', {
          body: {
            service_id: cat.cut.id,
            starts_at: '2026-03-09T15:00:00Z',
            staff_member_id: cat.stylist.id,
            customer: { ...customer, email: `c${i}@example.com` },
          },
        }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((x) => x === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 422 && r.body.code === 'slot_unavailable')).toHaveLength(N - 1);
    expect(rows(s, "SELECT count(*) AS n FROM sched_bookings WHERE staff_member_id = ? AND starts_at = '2026-03-09T15:00:00.000Z'", cat.stylist.id)[0].n).toBe(
      1,
    );
  });

  it('overlapping (not identical) windows on one chair race: exactly one wins', async () => {
    const starts = ['15:00', '15:15', '15:30', '15:45', '14:30', '14:45'];
    const results = await Promise.all(
      starts.flatMap((t) =>
        [0, 1, 2].map(() =>
          s.api('POST', '/bookings', { body: { service_id: cat.cut.id, starts_at: `2026-03-10T${t}:00Z`, resource_id: cat.chair.id, customer } }),
        ),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.every((r) => r.status === 201 || r.body.code === 'slot_unavailable')).toBe(true);
  });

  it('class seats: parallel requests never exceed capacity', async () => {
    const yoga = await ok(s.api('POST', '/services', { body: { kind: 'class', name: 'Yoga', duration_minutes: 60, price_in_cents: 8_000, capacity: 5 } }));
    const session = await ok(s.api('POST', '/class_sessions', { body: { service_id: yoga.id, starts_at: '2026-03-11T12:00:00Z' } }));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => s.api('POST', '/bookings', { body: { class_session_id: session.id, customer: { email: `y${i}@example.com` } } })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(5);
    expect(results.filter((r) => r.body.code === 'slot_unavailable')).toHaveLength(15);
    const read = await ok(s.api('GET', `/class_sessions/${session.id}`), 200);
    expect(read).toMatchObject({ capacity: 5, seats_taken: 5, seats_left: 0 });
    expect(read.seat_booking_ids).toHaveLength(5);
  });
});
