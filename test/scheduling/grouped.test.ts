import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, tx, type Db } from '../../src/db/database.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { ApiError } from '../../src/errors.js';
import { AccountsService } from '../../src/accounts/service.js';
import { createBookingGrouped } from '../../src/modules/bookings/service.js';
import { bookingsStore } from '../../src/modules/bookings/store.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { customer, rows, salon } from './helpers.js';

describe('the overlap check (occupancy read by where it ends)', () => {
  let dir: string;
  let db: Db;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'posd-overlap-'));
    db = openDatabase(join(dir, 'x.db'));
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const iso = (minute: number) => new Date(Date.UTC(2030, 0, 1) + minute * 60_000).toISOString();
  const span = fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 1, max: 200 }));

  it('finds exactly the spans a naive overlap test finds, long covering ones included', () => {
    const store = bookingsStore(db);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('staff:a', 'staff:b'), span, fc.constantFrom('o1', 'o2', 'o3')), { maxLength: 25 }),
        fc.constantFrom('staff:a', 'staff:b'),
        span,
        fc.constantFrom('', 'o1', 'o2'),
        (held, subject, [from, length], except) => {
          db.exec('DELETE FROM sched_occupancy');
          tx(db, () => {
            for (const [s, [start, len], owner] of held) {
              store.occupy({ ownerId: owner, accountId: 'acc_x', liveMode: false, subject: s, startsAt: iso(start), endsAt: iso(start + len) });
            }
          });
          const to = from + length;
          const expected = held.some(([s, [start, len], owner]) => s === subject && owner !== except && start < to && start + len > from);
          const found = store.conflict(subject, iso(from), iso(to), except);
          expect(found !== undefined).toBe(expected);
          if (found) {
            expect(held.some(([s, [start, len], owner]) => owner === found && s === subject && start < to && start + len > from)).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('POST /bookings through the group commit', () => {
  const clock = new ManualClock(Date.parse('2026-03-02T08:00:00.000Z'));
  let s: TestServer;
  let cat: Awaited<ReturnType<typeof salon>>;
  beforeAll(async () => {
    s = await startTestServer({ clock });
    cat = await salon(s);
  });
  afterAll(() => s.stop());

  it('bookings queued together share a batch: each sees the slots taken before it, a refused one fails alone', async () => {
    const account = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock).account(s.installation.sandbox_id)!;
    const at = (t: string) => ({ service_id: cat.cut.id, staff_member_id: cat.stylist.id, starts_at: t, customer });
    // Queued in one turn of the event loop, so they run in one transaction, in this order.
    const outcomes = await Promise.allSettled([
      createBookingGrouped(s.daemon.ctx, account, at('2026-03-04T10:00:00Z')),
      createBookingGrouped(s.daemon.ctx, account, at('2026-03-04T10:30:00Z')), // overlaps the first
      createBookingGrouped(s.daemon.ctx, account, at('2026-03-04T11:00:00Z')), // starts where the first ends
      createBookingGrouped(s.daemon.ctx, account, at('2026-03-01T11:00:00Z')), // in the past: 400
      createBookingGrouped(s.daemon.ctx, account, at('2026-03-04T10:00:00Z')), // the first's slot again
    ]);
    const codes = outcomes.map((o) => (o.status === 'fulfilled' ? 'booked' : o.reason instanceof ApiError ? o.reason.code : String(o.reason)));
    expect(codes).toEqual(['booked', 'slot_unavailable', 'booked', 'validation_error', 'slot_unavailable']);
    const booked = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value.id] : []));
    // Only the two that succeeded left rows: the refused ones' savepoints rolled back.
    const placeholders = booked.map(() => '?').join(', ');
    expect(
      rows(s, `SELECT id FROM sched_bookings WHERE staff_member_id = ? AND starts_at LIKE '2026-03-0%' ORDER BY starts_at`, cat.stylist.id).map((r) => r.id),
    ).toEqual(booked);
    expect(rows(s, `SELECT count(*) AS n FROM sched_occupancy WHERE owner_id IN (${placeholders})`, ...booked)[0].n).toBe(2);
    expect(rows(s, `SELECT count(*) AS n FROM sync_outbox WHERE kind = 'booking'`)[0].n).toBe(2);
    // Resolved only after the commit: another connection to the file sees both bookings.
    const other = openDatabase(join(s.dataDir, 'posd.db'), { readonly: true });
    try {
      expect((other.prepare(`SELECT count(*) AS n FROM sched_bookings WHERE id IN (${placeholders})`).get(...booked) as { n: number }).n).toBe(2);
    } finally {
      other.close();
    }
  });

  it('parallel HTTP requests for distinct and repeated slots: one 201 per slot, the repeats 422, nothing half written', async () => {
    const slots = ['12:00', '13:00', '14:00', '15:00', '16:00'];
    const results = await Promise.all(
      [...slots, ...slots].map((t, i) =>
        s.api('POST', '/bookings', {
          body: {
            service_id: cat.cut.id,
            starts_at: `2026-03-05T${t}:00Z`,
            staff_member_id: cat.stylist.id,
            customer: { ...customer, email: `p${i}@example.com` },
          },
        }),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(5);
    expect(results.filter((r) => r.status === 422 && r.body.code === 'slot_unavailable')).toHaveLength(5);
    const won = results.filter((r) => r.status === 201).map((r) => r.body.starts_at as string);
    expect(won.sort()).toEqual(slots.map((t) => `2026-03-05T${t}:00.000Z`));
    expect(rows(s, "SELECT count(*) AS n FROM sched_occupancy WHERE subject = ? AND starts_at LIKE '2026-03-05%'", `staff:${cat.stylist.id}`)[0].n).toBe(5);
  });

  it('stores the Idempotency-Key answer with the booking: a replay is the same booking, byte for byte', async () => {
    const headers = { 'idempotency-key': 'till-7-booking-0001' };
    const body = { service_id: cat.cut.id, starts_at: '2026-03-06T09:00:00Z', staff_member_id: cat.stylist.id, customer };
    const first = await s.api('POST', '/bookings', { body, headers });
    expect(first.status).toBe(201);
    const stored = rows(s, "SELECT state, status_code, response FROM idempotency_keys WHERE key = 'till-7-booking-0001'");
    expect(stored).toEqual([{ state: 'done', status_code: 201, response: first.text }]);
    const again = await s.api('POST', '/bookings', { body, headers });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(rows(s, "SELECT count(*) AS n FROM sched_bookings WHERE starts_at = '2026-03-06T09:00:00.000Z'")[0].n).toBe(1);
  });
});
