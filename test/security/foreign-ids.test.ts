import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { customer, ok, salon } from '../scheduling/helpers.js';

// Issue 17, hole 9: a contract naming another account's booking_id was accepted (17 other kinds of
// foreign id in bodies were already refused). Every body id is resolved in the caller's account and
// environment, and a foreign one is answered like one that does not exist.
const clock = new ManualClock(Date.parse('2026-03-02T08:00:00.000Z'));
let s: TestServer;
let sandboxBooking: string;
let liveBooking: string;

async function bookingFor(key: string): Promise<string> {
  const cat = await salon(s, { key });
  const b = await ok(
    s.api('POST', '/bookings', { key, body: { service_id: cat.cut.id, starts_at: '2026-03-02T16:00:00Z', staff_member_id: cat.stylist.id, customer } }),
  );
  return b.id;
}

async function templateFor(key: string): Promise<string> {
  return (await ok(s.api('POST', '/contract_templates', { key, body: { name: 'Consent', body: '<p>Yo, {nombre}, acepto.</p>', fields: [] } }))).id;
}

beforeAll(async () => {
  s = await startTestServer({ clock });
  sandboxBooking = await bookingFor(s.installation.keys.test);
  liveBooking = await bookingFor(s.installation.keys.live);
});
afterAll(() => s.stop());

describe('ids in bodies are resolved in the caller account and environment', () => {
  it('a contract naming another account booking_id is refused like an unknown one, and nothing is made', async () => {
    const live = s.installation.keys.live;
    const template = await templateFor(live);
    const contract = { template_id: template, customer: { name: 'Ana', phone: '+50255550000' } };
    const before = (await s.api('GET', '/contracts', { key: live })).body.length;

    const foreign = await s.api('POST', '/contracts', { key: live, body: { ...contract, booking_id: sandboxBooking } });
    const unknown = await s.api('POST', '/contracts', { key: live, body: { ...contract, booking_id: 'bk_does_not_exist' } });
    expect(foreign.status).toBe(400);
    expect(foreign.body.code).toBe('validation_error');
    expect(Object.keys(foreign.body.errors)).toEqual(['booking_id']);
    // No existence oracle: the foreign id gets the same words as a made-up one.
    expect(foreign.body.errors.booking_id[0].replace(sandboxBooking, 'ID')).toBe(unknown.body.errors.booking_id[0].replace('bk_does_not_exist', 'ID'));
    expect((await s.api('GET', '/contracts', { key: live })).body.length).toBe(before);

    const own = await s.api('POST', '/contracts', { key: live, body: { ...contract, booking_id: liveBooking } });
    expect(own.status).toBe(201);
    expect(own.body.booking_id).toBe(liveBooking);
  });
});
