import { afterEach, describe, expect, it } from 'vitest';
import { addStoreAccount, http, pairStoreAndCentral, removeDir, startCentral, startStore, until, type TestStore } from './helpers.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

type Db = TestStore['daemon']['ctx']['db'];
const row = (db: Db, table: string, id: string) => db.prepare(`SELECT * FROM ${table} WHERE id = ?`).get(id) as Record<string, unknown> | undefined;
const all = (db: Db, sql: string, ...args: unknown[]) => db.prepare(sql).all(...args);
const outboxMax = (db: Db) => (db.prepare('SELECT coalesce(max(seq), 0) AS m FROM sync_outbox').get() as { m: number }).m;
const customer = { name: 'María López', email: 'maria@example.com', phone: '+50255550000' };

describe('the catalogue is managed at the central', () => {
  it('products, prices and coupons made and changed at the central are at the box with the same ids and state', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const sdb = store.daemon.ctx.db;
    const cdb = central.daemon.ctx.db;
    const outboxBefore = outboxMax(sdb);
    const prod = await http('POST', `${central.url}/api/products`, acct.key, {
      product: { name: 'Coffee', prices_attributes: [{ amount_in_cents: 1500, currency: 'GTQ' }] },
    });
    expect(prod.status).toBe(201);
    const coupon = await http('POST', `${central.url}/api/coupons`, acct.key, { name: 'SUMMER', percent_off: 10 });
    expect(coupon.status).toBe(201);
    await until('the product at the box', () => row(sdb, 'products', prod.body.id));
    // Changed: renamed, a new price, then archived; the coupon limited.
    expect(
      (
        await http('PATCH', `${central.url}/api/products/${prod.body.id}`, acct.key, {
          product: { name: 'Coffee (large)', prices_attributes: [{ amount_in_cents: 2000, currency: 'GTQ' }] },
        })
      ).status,
    ).toBe(200);
    expect((await http('PATCH', `${central.url}/api/products/${prod.body.id}`, acct.key, { product: { status: 'archived' } })).status).toBe(200);
    expect((await http('PATCH', `${central.url}/api/coupons/${coupon.body.id}`, acct.key, { max_redemptions: 5 })).status).toBe(200);

    await until(
      'the changes at the box',
      () => row(sdb, 'products', prod.body.id)?.status === 'archived' && row(sdb, 'coupons', coupon.body.id)?.max_redemptions === 5,
    );
    expect(row(sdb, 'products', prod.body.id)).toEqual(row(cdb, 'products', prod.body.id));
    expect(all(sdb, 'SELECT * FROM prices WHERE product_id = ? ORDER BY id', prod.body.id)).toEqual(
      all(cdb, 'SELECT * FROM prices WHERE product_id = ? ORDER BY id', prod.body.id),
    );
    expect(row(sdb, 'coupons', coupon.body.id)).toEqual(row(cdb, 'coupons', coupon.body.id));
    // Through the box's own API, as the counter sees them.
    expect((await http('GET', `${store.url}/api/products/${prod.body.id}`, acct.key)).body).toEqual(
      (await http('GET', `${central.url}/api/products/${prod.body.id}`, acct.key)).body,
    );
    expect((await http('GET', `${store.url}/api/coupons/${coupon.body.id}`, acct.key)).body).toEqual(
      (await http('GET', `${central.url}/api/coupons/${coupon.body.id}`, acct.key)).body,
    );
    expect(outboxMax(sdb)).toBe(outboxBefore); // nothing pushed back
  });

  it('a booking made online at the central takes the slot at the counter; cancelled there, the slot is free again', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    const sdb = store.daemon.ctx.db;
    const cdb = central.daemon.ctx.db;
    const cut = await http('POST', `${central.url}/api/services`, acct.key, {
      kind: 'appointment',
      name: 'Haircut',
      duration_minutes: 60,
      price_in_cents: 15_000,
    });
    const yoga = await http('POST', `${central.url}/api/services`, acct.key, {
      kind: 'class',
      name: 'Yoga',
      duration_minutes: 60,
      price_in_cents: 5_000,
      capacity: 10,
    });
    const stylist = await http('POST', `${central.url}/api/staff_members`, acct.key, { name: 'Ana', service_ids: [cut.body.id] });
    const room = await http('POST', `${central.url}/api/resources`, acct.key, { name: 'Studio', kind: 'room' });
    expect([cut.status, yoga.status, stylist.status, room.status]).toEqual([201, 201, 201, 201]);
    const session = await http('POST', `${central.url}/api/class_sessions`, acct.key, {
      service_id: yoga.body.id,
      starts_at: '2027-03-02T18:00:00-06:00',
      resource_id: room.body.id,
    });
    expect(session.status).toBe(201);
    const slot = { service_id: cut.body.id, starts_at: '2027-03-02T10:00:00-06:00', staff_member_id: stylist.body.id };
    const online = await http('POST', `${central.url}/api/bookings`, acct.key, { ...slot, customer });
    expect(online.status).toBe(201);
    const seat = await http('POST', `${central.url}/api/bookings`, acct.key, { class_session_id: session.body.id, customer });
    expect(seat.status).toBe(201);

    await until('the online booking at the box', () => row(sdb, 'sched_bookings', online.body.id) && row(sdb, 'sched_bookings', seat.body.id));
    for (const [table, id] of [
      ['sched_services', cut.body.id],
      ['sched_services', yoga.body.id],
      ['sched_staff_members', stylist.body.id],
      ['sched_resources', room.body.id],
      ['sched_class_sessions', session.body.id],
      ['sched_bookings', online.body.id],
      ['sched_bookings', seat.body.id],
    ]) {
      expect(row(sdb, table, id), `${table} ${id}`).toEqual(row(cdb, table, id));
    }
    const occupancy = (db: Db) => all(db, 'SELECT owner_id, subject, starts_at, ends_at FROM sched_occupancy ORDER BY owner_id, subject');
    expect(occupancy(sdb)).toEqual(occupancy(cdb));
    expect((await http('GET', `${store.url}/api/class_sessions/${session.body.id}`, acct.key)).body).toMatchObject({ id: session.body.id });

    // The counter cannot give the slot away again.
    const counter = await http('POST', `${store.url}/api/bookings`, acct.key, { ...slot, customer: { ...customer, email: 'walk-in@example.com' } });
    expect(counter.status).toBe(422);
    expect(counter.body.code).toBe('slot_unavailable');

    // Cancelled online: the box frees the slot, and the counter books it.
    expect((await http('POST', `${central.url}/api/bookings/${online.body.id}/cancellation`, acct.key, {})).status).toBeLessThan(300);
    await until('the cancellation at the box', () => row(sdb, 'sched_bookings', online.body.id)?.status === 'cancelled');
    expect(row(sdb, 'sched_bookings', online.body.id)).toEqual(row(cdb, 'sched_bookings', online.body.id));
    const again = await http('POST', `${store.url}/api/bookings`, acct.key, { ...slot, customer: { ...customer, email: 'walk-in@example.com' } });
    expect(again.status).toBe(201);
  });

  it('a box that joins later learns what the central published for its accounts before (catalogue, bookings, ledger)', async () => {
    const central = await startCentral();
    cleanup.push(() => central.stop());
    const acct = addStoreAccount(central);
    const prod = await http('POST', `${central.url}/api/products`, acct.key, {
      product: { name: 'Tea', prices_attributes: [{ amount_in_cents: 900, currency: 'GTQ' }] },
    });
    const cut = await http('POST', `${central.url}/api/services`, acct.key, {
      kind: 'appointment',
      name: 'Haircut',
      duration_minutes: 60,
      price_in_cents: 15_000,
    });
    const stylist = await http('POST', `${central.url}/api/staff_members`, acct.key, { name: 'Ana' });
    const booking = await http('POST', `${central.url}/api/bookings`, acct.key, {
      service_id: cut.body.id,
      starts_at: '2027-03-02T10:00:00-06:00',
      staff_member_id: stylist.body.id,
      customer,
    });
    const co = await http('POST', `${central.url}/api/checkouts`, acct.testKey, { items: [{ name: 'Online', amount_in_cents: 20_000 }], currency: 'GTQ' });
    const paid = await http('POST', `${central.url}/api/test_helpers/checkouts/${co.body.id}/pay`, acct.testKey, { method: 'card', outcome: 'succeeded' });
    expect([prod.status, booking.status, paid.status]).toEqual([201, 201, 200]);

    const store = await startStore(central.url, acct.key);
    cleanup.push(() => removeDir(store.dataDir));
    cleanup.push(() => store.stop());
    const sdb = store.daemon.ctx.db;
    await until(
      'the history at the box',
      () =>
        row(sdb, 'products', prod.body.id) && row(sdb, 'sched_bookings', booking.body.id) && row(sdb, 'balance_transactions', paid.body.balance_transaction_id),
    );
    expect(row(sdb, 'sched_bookings', booking.body.id)).toEqual(row(central.daemon.ctx.db, 'sched_bookings', booking.body.id));
    expect((await http('GET', `${store.url}/api/balances`, acct.testKey)).body).toEqual((await http('GET', `${central.url}/api/balances`, acct.testKey)).body);
    expect(outboxMax(sdb)).toBe(0);
  });
});
