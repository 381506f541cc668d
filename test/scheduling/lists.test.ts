import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { AccountsService } from '../../src/accounts/service.js';
import { ok, salon } from './helpers.js';

const clock = new ManualClock(Date.parse('2026-03-02T08:00:00.000Z'));
let s: TestServer;
let accounts: AccountsService;
let cat: Awaited<ReturnType<typeof salon>>;
let second: { id: string; key: string };
let orgKey: string;
const made: any[] = [];

beforeAll(async () => {
  s = await startTestServer({ clock });
  accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  cat = await salon(s);
  const other = accounts.createAccount({ name: 'Branch 2', organizationId: s.installation.organization_id });
  second = { id: other.sandbox.id, key: accounts.createKey({ accountId: other.sandbox.id, environment: 'test' }).key };
  orgKey = accounts.createKey({ organizationId: s.installation.organization_id, environment: 'test' }).key;
  const people = [
    { name: 'María López', email: 'maria@example.com', phone: '+50255550001' },
    { name: 'José Pérez', email: 'jose@example.com', phone: '+50255550002' },
    { name: 'Lucía Gómez', email: 'lucia@example.com', phone: '+50255550003' },
  ];
  // Created out of time order: the list must come back in time order.
  for (const [i, h] of [15, 13, 17].entries()) {
    made.push(
      await ok(
        s.api('POST', '/bookings', {
          body: { service_id: cat.cut.id, starts_at: `2026-03-03T${h}:00:00Z`, staff_member_id: cat.stylist.id, customer: people[i] },
        }),
      ),
    );
  }
  made.push(
    await ok(
      s.api('POST', '/bookings', { body: { service_id: cat.cut.id, starts_at: '2026-03-04T15:00:00Z', resource_id: cat.chair.id, customer: people[0] } }),
    ),
  );
  const svc2 = await ok(s.api('POST', '/services', { key: second.key, body: { kind: 'appointment', name: 'Nails', price_in_cents: 9_000 } }));
  const stf2 = await ok(s.api('POST', '/staff_members', { key: second.key, body: { name: 'Rosa' } }));
  made.push(
    await ok(
      s.api('POST', '/bookings', {
        key: second.key,
        body: { service_id: svc2.id, starts_at: '2026-03-03T14:00:00Z', staff_member_id: stf2.id, customer: { email: 'zoe@example.com', name: 'Zoe' } },
      }),
    ),
  );
  await ok(s.api('POST', `/bookings/${made[2].id}/cancellation`));
});
afterAll(() => s.stop());

const ids = (list: any[]) => list.map((b) => b.id);

describe('GET /bookings', () => {
  it('lists in time order with per_page pagination headers (default 25)', async () => {
    const r = await s.api('GET', '/bookings');
    expect(r.status).toBe(200);
    expect(ids(r.body)).toEqual([made[1].id, made[0].id, made[2].id, made[3].id]);
    expect(r.headers['page-items']).toBe('25');
    expect(r.headers['total-count']).toBe('4');
    const p2 = await s.api('GET', '/bookings?per_page=3&page=2');
    expect(ids(p2.body)).toEqual([made[3].id]);
    expect(String(p2.headers.link)).toContain('per_page=3');
    expect((await s.api('GET', '/bookings?per_page=101')).status).toBe(400);
  });

  it('filters by status, time, staff, customer, kind and text', async () => {
    const q = async (query: string) => ids(await ok(s.api('GET', `/bookings?${query}`), 200));
    expect(await q('status=cancelled')).toEqual([made[2].id]);
    expect(await q(`from=${encodeURIComponent('2026-03-03T09:00:00-06:00')}&to=${encodeURIComponent('2026-03-03T17:00:00Z')}`)).toEqual([
      made[0].id,
      made[2].id,
    ]);
    expect(await q(`staff_member_id=${cat.stylist.id}`)).toEqual([made[1].id, made[0].id, made[2].id]);
    expect(await q(`customer_id=${made[0].customer.id}`)).toEqual([made[0].id, made[3].id]);
    expect(await q('kind=class_seat')).toEqual([]);
    expect(await q('kind=appointment')).toHaveLength(4);
    expect(await q('q=jos')).toEqual([made[1].id]);
    expect(await q('q=LUCIA@EXAMPLE')).toEqual([made[2].id]);
    expect(await q('q=550001')).toEqual([made[0].id, made[3].id]);
    expect(await q('q=%25')).toEqual([]);
    expect((await s.api('GET', '/bookings?status=lost')).status).toBe(400);
    expect((await s.api('GET', '/bookings?from=yesterday')).status).toBe(400);
  });

  it("an organization key lists every account's bookings; an account never sees another's", async () => {
    const all = await ok(s.api('GET', '/bookings', { key: orgKey }), 200);
    expect(ids(all)).toEqual([made[1].id, made[4].id, made[0].id, made[2].id, made[3].id]);
    expect(new Set(all.map((b: any) => b.account_id))).toEqual(new Set([s.installation.sandbox_id, second.id]));
    expect(ids(await ok(s.api('GET', '/bookings', { key: orgKey, headers: { 'x-account-id': second.id } }), 200))).toEqual([made[4].id]);
    expect((await s.api('GET', `/bookings/${made[4].id}`)).status).toBe(404);
    expect((await ok(s.api('GET', `/bookings/${made[4].id}`, { key: orgKey }), 200)).account_id).toBe(second.id);
    expect((await s.api('GET', `/bookings/${made[4].id}`, { key: orgKey, headers: { 'x-account-id': s.installation.sandbox_id } })).status).toBe(404);
    expect((await s.api('GET', `/bookings/${made[0].id}`, { key: s.installation.keys.live })).status).toBe(404);
    expect((await s.api('POST', '/bookings', { key: orgKey, body: {} })).body.code).toBe('organization_key_unsupported');
  });

  it('403 bookings_not_enabled when the account turned bookings off', async () => {
    accounts.updateSettings(second.id, { bookings_enabled: false });
    const r = await s.api('GET', '/bookings', { key: second.key });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('bookings_not_enabled');
    expect((await s.api('POST', '/bookings', { key: second.key, body: { class_session_id: 'cls_x' } })).body.code).toBe('bookings_not_enabled');
    // The organization still lists the accounts that take bookings.
    expect(ids(await ok(s.api('GET', '/bookings', { key: orgKey }), 200))).not.toContain(made[4].id);
    accounts.updateSettings(second.id, { bookings_enabled: true });
  });

  it("the customer's access page shows the booking behind its secret link only", async () => {
    const url = new URL(made[0].access_url);
    const r = await request(`${s.url}${url.pathname}`);
    expect(r.statusCode).toBe(200);
    const html = await r.body.text();
    expect(html).toContain(made[0].id);
    expect(html).toContain('confirmed');
    const bad = await request(`${s.url}/booking_pages/${made[0].id}/${'a'.repeat(32)}`);
    expect(bad.statusCode).toBe(404);
    await bad.body.dump();
  });

  it('the customer cancels from the page up to 24 hours before the start, never later', async () => {
    const soon = await ok(
      s.api('POST', '/bookings', {
        body: { service_id: cat.cut.id, starts_at: '2026-03-02T20:00:00Z', staff_member_id: cat.stylist.id, customer: { email: 'soon@example.com' } },
      }),
    );
    const later = await ok(
      s.api('POST', '/bookings', {
        body: { service_id: cat.cut.id, starts_at: '2026-03-06T20:00:00Z', staff_member_id: cat.stylist.id, customer: { email: 'later@example.com' } },
      }),
    );
    const post = (b: any) =>
      request(`${s.url}${new URL(b.access_url).pathname}/cancellation`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: '',
      });
    const refused = await post(soon);
    expect(refused.statusCode).toBe(422);
    await refused.body.dump();
    expect((await ok(s.api('GET', `/bookings/${soon.id}`), 200)).status).toBe('confirmed');
    const page = await (await request(`${s.url}${new URL(later.access_url).pathname}`)).body.text();
    expect(page).toContain('/cancellation');
    const done = await post(later);
    expect(done.statusCode).toBe(303);
    await done.body.dump();
    expect(await ok(s.api('GET', `/bookings/${later.id}`), 200)).toMatchObject({ status: 'cancelled', cancelled_by: 'customer' });
    const twice = await post(later);
    expect(twice.statusCode).toBe(422);
    await twice.body.dump();
    const forged = await request(`${s.url}/booking_pages/${soon.id}/${'b'.repeat(32)}/cancellation`, { method: 'POST' });
    expect(forged.statusCode).toBe(404);
    await forged.body.dump();
  });
});

describe('services, staff members and resources', () => {
  it('create, read, list, patch, with 400 on broken rules and 404 across accounts', async () => {
    const svc = await ok(s.api('POST', '/services', { body: { kind: 'appointment', name: 'Massage', duration_minutes: 90, price_in_cents: 30_000 } }));
    expect(svc).toMatchObject({ kind: 'appointment', duration_minutes: 90, processing_minutes: 0, currency: 'GTQ', payment_policy: 'none', active: true });
    expect(svc.id).toMatch(/^svc_/);
    const patched = await ok(s.api('PATCH', `/services/${svc.id}`, { body: { price_in_cents: 35_000, payment_policy: 'full' } }), 200);
    expect(patched).toMatchObject({ price_in_cents: 35_000, payment_policy: 'full', name: 'Massage' });
    expect((await s.api('PATCH', `/services/${svc.id}`, { body: { payment_policy: 'deposit' } })).body.errors.deposit_in_cents).toBeDefined();
    expect(
      (await s.api('POST', '/services', { body: { kind: 'appointment', name: 'x', price_in_cents: 1, processing_minutes: 10 } })).body.errors.final_minutes,
    ).toBeDefined();
    expect((await s.api('POST', '/services', { body: { kind: 'spa', name: 'x', price_in_cents: 1 } })).status).toBe(400);
    expect((await s.api('POST', '/services', { body: { kind: 'appointment', name: 'x', price_in_cents: '100.5' } })).status).toBe(400);
    expect((await s.api('GET', `/services/${svc.id}`, { key: second.key })).status).toBe(404);
    expect(ids(await ok(s.api('GET', '/services?kind=appointment&items=100'), 200))).toContain(svc.id);

    const staff = await ok(s.api('POST', '/staff_members', { body: { name: 'Pedro', service_ids: [svc.id] } }));
    expect(staff.service_ids).toEqual([svc.id]);
    expect((await s.api('POST', '/staff_members', { body: { name: 'X', service_ids: ['svc_nope'] } })).status).toBe(400);
    expect((await ok(s.api('PATCH', `/staff_members/${staff.id}`, { body: { active: false } }), 200)).active).toBe(false);
    const inactive = await s.api('POST', '/bookings', {
      body: { service_id: svc.id, starts_at: '2026-03-20T15:00:00Z', staff_member_id: staff.id, customer: { email: 'a@example.com' } },
    });
    expect(inactive.status).toBe(400);
    await ok(s.api('PATCH', `/staff_members/${staff.id}`, { body: { active: true } }), 200);
    const notOffered = await s.api('POST', '/bookings', {
      body: { service_id: cat.cut.id, starts_at: '2026-03-20T15:00:00Z', staff_member_id: staff.id, customer: { email: 'a@example.com' } },
    });
    expect(notOffered.body.errors.staff_member_id).toBeDefined();

    const room = await ok(s.api('POST', '/resources', { body: { name: 'Room A' } }));
    expect(room).toMatchObject({ kind: 'room', room_type_id: null });
    expect(room.calendar_url).toMatch(/\/calendars\/res_/);
    expect((await s.api('POST', '/resources', { body: { name: 'Unit', kind: 'lodging_unit' } })).body.errors.room_type_id).toBeDefined();
    expect((await s.api('POST', '/resources', { body: { name: 'Unit', room_type_id: svc.id } })).body.errors.room_type_id).toBeDefined();
    expect((await ok(s.api('PUT', `/resources/${room.id}`, { body: { name: 'Room B' } }), 200)).name).toBe('Room B');
    expect(ids(await ok(s.api('GET', '/resources?kind=room'), 200))).toContain(room.id);
  });
});
