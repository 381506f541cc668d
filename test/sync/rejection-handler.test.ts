import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyFeedPage } from '../../src/sync/store/feed.js';
import { syncStatus } from '../../src/sync/status.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { tableRows } from './replay.js';

// A box applying the central's decisions on its own bookings (the feed page as the pull loop gets it).
let s: TestServer;
let cut: { id: string };
let stylist: { id: string };
beforeAll(async () => {
  s = await startTestServer();
  cut = (await s.api('POST', '/services', { body: { kind: 'appointment', name: 'Haircut', duration_minutes: 60, price_in_cents: 15_000 } })).body;
  stylist = (await s.api('POST', '/staff_members', { body: { name: 'Ana' } })).body;
});
afterAll(() => s.stop());

let seq = 0;
let hour = 8;
async function booked(): Promise<{ id: string; recordId: string }> {
  const starts = new Date(Math.floor(Date.now() / 86_400_000 + 2) * 86_400_000 + hour++ * 3_600_000).toISOString();
  const b = await s.api('POST', '/bookings', {
    body: { service_id: cut.id, starts_at: starts, staff_member_id: stylist.id, customer: { email: 'ana@example.com' } },
  });
  expect(b.status).toBe(201);
  const rec = tableRows<{ id: string; payload: string }>(s, "SELECT id, payload FROM sync_outbox WHERE kind = 'booking' ORDER BY seq DESC LIMIT 1")[0];
  expect(JSON.parse(rec.payload).booking.id).toBe(b.body.id);
  return { id: b.body.id, recordId: rec.id };
}

function decide(recordId: string, code: string | null): void {
  const at = new Date().toISOString();
  applyFeedPage(s.daemon.ctx, {
    changes: [
      {
        seq: ++seq,
        kind: 'record_rejected',
        account_id: s.installation.sandbox_id,
        organization_id: s.installation.organization_id,
        live_mode: false,
        object_id: recordId,
        payload: { record_id: recordId, kind: 'booking', reason: 'refused on purpose', code, store_id: 'store_x' },
        created_at: at,
      },
    ],
    cursor: seq,
    server_time: at,
  });
}

const status = async (id: string) => (await s.api('GET', `/bookings/${id}`)).body.status;
const cancelledEvents = (id: string) => tableRows(s, "SELECT id FROM events WHERE type = 'booking.cancelled' AND object_id = ?", id);

describe('the bookings module applying the central’s refusal of a booking', () => {
  it('cancels the booking and emits booking.cancelled once for a slot the central gave away, with the cursor', async () => {
    const b = await booked();
    decide(b.recordId, 'slot_unavailable');
    expect(await status(b.id)).toBe('cancelled');
    expect(cancelledEvents(b.id)).toHaveLength(1);
    expect(syncStatus(s.daemon.ctx.config, s.daemon.ctx.db).decisions[0]).toMatchObject({
      record_id: b.recordId,
      kind: 'booking',
      reason: 'refused on purpose',
    });
    // The cancellation is itself a booking record for the central.
    const last = tableRows<{ id: string; payload: string }>(s, "SELECT id, payload FROM sync_outbox WHERE kind = 'booking' ORDER BY seq DESC LIMIT 1")[0];
    expect(JSON.parse(last.payload)).toMatchObject({ op: 'cancel', row: { id: b.id, status: 'cancelled', cancellation_reason: 'refused_by_central' } });
    // A later refusal of the same booking (another of its records) changes nothing more.
    decide(last.id, 'slot_unavailable');
    expect(await status(b.id)).toBe('cancelled');
    expect(cancelledEvents(b.id)).toHaveLength(1);
  });

  it('leaves the booking as it is for a refusal that is no decision on its slot (a malformed record)', async () => {
    const b = await booked();
    decide(b.recordId, null);
    expect(await status(b.id)).toBe('confirmed');
    expect(cancelledEvents(b.id)).toEqual([]);
    expect(syncStatus(s.daemon.ctx.config, s.daemon.ctx.db).rejected_records).toBe(3);
  });
});
