import { afterEach, describe, expect, it } from 'vitest';
import { http, pairStoreAndCentral, startStore, until, type TestStore, appliedAtCentral } from './helpers.js';
import { replayAtCentral, tableRows } from './replay.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const customer = { name: 'María López', email: 'maria@example.com', phone: '+50255550000' };
/** A start on the hour, `days` from now (bookings must not be in the past). */
const slot = (days: number, hour: number) => new Date(Math.floor(Date.now() / 86_400_000 + days) * 86_400_000 + hour * 3_600_000).toISOString();
const synced = (store: TestStore) => appliedAtCentral(store);
/** The booking as both boxes answer it, without the links (each box hands out its own host). */
const comparable = (b: Record<string, unknown>) => {
  const { access_url: _a, ...rest } = b;
  return rest;
};

async function salonAtStore(store: TestStore, key: string) {
  const post = async (path: string, body: unknown) => {
    const r = await http('POST', `${store.url}/api${path}`, key, body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body;
  };
  const cut = await post('/services', { kind: 'appointment', name: 'Haircut', duration_minutes: 60, price_in_cents: 15_000 });
  const stylist = await post('/staff_members', { name: 'Ana' });
  return { cut, stylist, post };
}

describe('bookings made at the store', () => {
  it('exist at the central with the same ids and states, with the service and staff member they name; a replay creates nothing twice', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const { cut, stylist, post } = await salonAtStore(store, acct.key);
    const kept = await post('/bookings', { service_id: cut.id, starts_at: slot(2, 15), staff_member_id: stylist.id, customer });
    const dropped = await post('/bookings', { service_id: cut.id, starts_at: slot(2, 17), staff_member_id: stylist.id, customer });
    await post(`/bookings/${kept.id}/check_in`, {});
    await post(`/bookings/${dropped.id}/cancellation`, { reason: 'customer called' });
    await synced(store);

    for (const id of [kept.id, dropped.id]) {
      const atStore = await http('GET', `${store.url}/api/bookings/${id}`, acct.key);
      const atCentral = await http('GET', `${central.url}/api/bookings/${id}`, acct.key);
      expect(atCentral.status).toBe(200);
      expect(comparable(atCentral.body)).toEqual(comparable(atStore.body));
    }
    expect((await http('GET', `${central.url}/api/bookings/${kept.id}`, acct.key)).body.status).toBe('checked_in');
    expect((await http('GET', `${central.url}/api/bookings/${dropped.id}`, acct.key)).body).toMatchObject({
      status: 'cancelled',
      cancellation_reason: 'customer called',
    });
    expect((await http('GET', `${central.url}/api/services/${cut.id}`, acct.key)).body).toMatchObject({ id: cut.id, name: 'Haircut' });
    expect((await http('GET', `${central.url}/api/staff_members/${stylist.id}`, acct.key)).body).toMatchObject({ id: stylist.id, name: 'Ana' });
    // The checked-in booking holds its time at the central as at the store; the cancelled one none.
    const occupancy = 'SELECT owner_id, subject, starts_at, ends_at FROM sched_occupancy ORDER BY owner_id, subject';
    expect(tableRows(central, occupancy)).toEqual(tableRows(store, occupancy));
    expect(tableRows(central, occupancy)).toHaveLength(1);
    // The central's hold timers leave the store's bookings alone.
    expect(tableRows(central, 'SELECT DISTINCT origin_store_id AS s FROM sched_bookings')).toEqual([{ s: store.storeId }]);

    const tables = ['sched_bookings', 'sched_occupancy', 'sched_services', 'sched_staff_members'];
    const before = tables.map((t) => tableRows(central, `SELECT * FROM ${t} ORDER BY rowid`));
    const replayed = await replayAtCentral(central, store, acct.key, ['booking']);
    expect(replayed.rejected).toEqual([]);
    expect(tables.map((t) => tableRows(central, `SELECT * FROM ${t} ORDER BY rowid`))).toEqual(before);
  });

  it('booked offline for a slot the central gave meanwhile are refused there, and the store cancels its booking on the central’s decision', async () => {
    const { central, store: online, acct } = await pairStoreAndCentral(cleanup);
    const { cut, stylist, post } = await salonAtStore(online, acct.key);
    // A first booking teaches the central the service and the stylist (they travel with it).
    await post('/bookings', { service_id: cut.id, starts_at: slot(3, 14), staff_member_id: stylist.id, customer });
    await synced(online);
    await online.stop();
    // The box loses its link to the central.
    const offline = await startStore(central.url, acct.key, { dataDir: online.dataDir, sync: { central_url: 'http://127.0.0.1:9' } });
    cleanup.push(() => offline.stop());

    const starts = slot(3, 16);
    const atCentral = await http('POST', `${central.url}/api/bookings`, acct.key, {
      service_id: cut.id,
      starts_at: starts,
      staff_member_id: stylist.id,
      customer: { email: 'online@example.com' },
    });
    expect(atCentral.status, JSON.stringify(atCentral.body)).toBe(201);
    const atCounter = await http('POST', `${offline.url}/api/bookings`, acct.key, {
      service_id: cut.id,
      starts_at: starts,
      staff_member_id: stylist.id,
      customer,
    });
    expect(atCounter.status).toBe(201);
    expect(atCounter.body.status).toBe('confirmed');
    await offline.stop();

    const store = await startStore(central.url, acct.key, { dataDir: online.dataDir });
    cleanup.push(() => store.stop());
    const cancelled = await until('the store applies the central’s decision', async () => {
      const b = await http('GET', `${store.url}/api/bookings/${atCounter.body.id}`, acct.key);
      return b.body.status === 'cancelled' ? b.body : null;
    });
    expect(cancelled).toMatchObject({ cancelled_by: 'system', cancellation_reason: 'refused_by_central' });
    // Its slot is free at the store again; the central's booking keeps the slot there.
    expect(tableRows(store, 'SELECT owner_id FROM sched_occupancy WHERE owner_id = ?', atCounter.body.id)).toEqual([]);
    expect((await http('GET', `${central.url}/api/bookings/${atCentral.body.id}`, acct.key)).body.status).toBe('confirmed');

    const events = tableRows(store, "SELECT id, object_id, payload FROM events WHERE type = 'booking.cancelled'");
    expect(events).toHaveLength(1);
    expect(events[0].object_id).toBe(atCounter.body.id);
    expect(JSON.parse(events[0].payload as string)).toMatchObject({
      booking: { id: atCounter.body.id, status: 'cancelled' },
      reason: expect.stringContaining(atCentral.body.id),
    });

    const status = await http('GET', `${store.url}/sync/status`, acct.key);
    expect(status.body.rejected_records).toBe(1);
    expect(status.body.decisions).toEqual([expect.objectContaining({ kind: 'booking', reason: expect.stringContaining('already held at the central') })]);

    // The cancellation goes back up: the central then holds the counter's booking as cancelled,
    // and the cancellation event under the store's id.
    await synced(store);
    const atCentralNow = await until('the central learns the cancellation', async () => {
      const b = await http('GET', `${central.url}/api/bookings/${atCounter.body.id}`, acct.key);
      return b.status === 200 ? b.body : null;
    });
    expect(atCentralNow).toMatchObject({ status: 'cancelled', cancellation_reason: 'refused_by_central' });
    await until('the event reaches the central', () => tableRows(central, 'SELECT id FROM events WHERE id = ?', events[0].id).length === 1);
  });
});
