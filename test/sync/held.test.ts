import { afterEach, describe, expect, it } from 'vitest';
import { isoTime } from '../../src/clock.js';
import { tx } from '../../src/db/database.js';
import { applyHeldRecords } from '../../src/sync/central/projector.js';
import { nextBatch, recordAck } from '../../src/sync/store/push.js';
import { centralSide } from '../../src/sync/central/sync-store.js';
import { recordHash } from '../../src/sync/shared/wire.js';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, http, removeDir, startCentral, startStore, appliedAtCentral } from './helpers.js';
import { tableRows } from './replay.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const customer = { name: 'María López', email: 'maria@example.com', phone: '+50255550000' };
const slot = (days: number, hour: number) => new Date(Math.floor(Date.now() / 86_400_000 + days) * 86_400_000 + hour * 3_600_000).toISOString();

/**
 * A store that worked offline (bookings, a cancellation, a coupon), whose records then reached a
 * central of an older posd that had no applier for those kinds: acknowledged and kept as held,
 * exactly as that central's push would have left them.
 */
async function heldAtOlderCentral() {
  const central = await startCentral();
  cleanup.push(() => central.stop());
  const acct = addStoreAccount(central);
  const store = await startStore(central.url, acct.key, { sync: { central_url: 'http://127.0.0.1:9' } });
  cleanup.push(() => removeDir(store.dataDir));
  cleanup.push(() => store.stop());
  const post = async (path: string, body: unknown) => {
    const r = await http('POST', `${store.url}/api${path}`, acct.key, body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body;
  };
  const cut = await post('/services', { kind: 'appointment', name: 'Haircut', duration_minutes: 60, price_in_cents: 15_000 });
  const stylist = await post('/staff_members', { name: 'Ana' });
  const kept = await post('/bookings', { service_id: cut.id, starts_at: slot(2, 15), staff_member_id: stylist.id, customer });
  const dropped = await post('/bookings', { service_id: cut.id, starts_at: slot(2, 17), staff_member_id: stylist.id, customer });
  await post(`/bookings/${dropped.id}/cancellation`, {});
  const coupon = await post('/coupons', { name: 'MENOS10', amount_off_in_cents: 1_000, currency: 'GTQ' });

  // A batch says what stays behind it at the box (the central's stores panel shows it).
  const half = nextBatch(store.daemon.ctx.db, store.storeId, 2)!;
  expect(half.records).toHaveLength(2);
  expect(half.waiting).toBe(2);
  expect(half.waiting_since).toMatch(/^\d{4}-\d\d-\d\dT/);
  const batch = nextBatch(store.daemon.ctx.db, store.storeId, 500)!;
  expect(batch.records.map((r) => r.kind)).toEqual(['booking', 'booking', 'booking', 'coupon']);
  expect(batch).toMatchObject({ waiting: 0, waiting_since: null });
  const cdb = central.daemon.ctx.db;
  const at = isoTime(Date.now());
  tx(cdb, () => {
    const s = centralSide(cdb);
    s.ensureStore(store.storeId, acct.accountId, true, at);
    for (const r of batch.records) {
      const payload = JSON.stringify(r.payload);
      s.insertReceived({
        ...r,
        live_mode: 1,
        hash: recordHash(r, payload),
        payload,
        store_id: store.storeId,
        received_at: at,
        outcome: 'held',
        reason: `no applier for kind ${r.kind}`,
      });
    }
    s.setReceived(store.storeId, batch.records[batch.records.length - 1].seq, at);
    s.setApplied(store.storeId, 0, batch.records[batch.records.length - 1].seq);
  });
  recordAck(store.daemon.ctx.db, { applied_seq: batch.records[batch.records.length - 1].seq });
  return { central, store, acct, post, cut, stylist, kept, dropped, coupon };
}

const outcomes = (central: TestServer) => tableRows(central, 'SELECT kind, outcome FROM sync_received ORDER BY seq');
const bookingAt = async (central: TestServer, key: string, id: string) => (await http('GET', `${central.url}/api/bookings/${id}`, key)).body;

describe('records held by a central that did not know their kind', () => {
  it('are applied in the store’s order when a central that knows the kind starts', async () => {
    const { central, acct, kept, dropped, coupon } = await heldAtOlderCentral();
    // (Not checked here that the booking is absent first: the central's projector timer may apply
    // the held records as soon as they are written, on a loaded box before this line runs.)
    // What the projector does at its first pass when the upgraded central starts (its timer may
    // have done it already: then this sweep finds nothing left).
    expect([0, 4]).toContain(applyHeldRecords(central.daemon.ctx));
    expect(outcomes(central).map((o) => o.outcome)).toEqual(['applied', 'applied', 'applied', 'applied']);
    expect(await bookingAt(central, acct.key, kept.id)).toMatchObject({ status: 'confirmed' });
    expect(await bookingAt(central, acct.key, dropped.id)).toMatchObject({ status: 'cancelled' });
    expect((await http('GET', `${central.url}/api/coupons/${coupon.id}`, acct.key)).body).toMatchObject({ id: coupon.id, name: 'MENOS10' });
    expect(applyHeldRecords(central.daemon.ctx)).toBe(0);
  });

  it('are applied before the store’s next records when it pushes before the held ones were replayed', async () => {
    const { central, store: offline, acct, cut, stylist, kept, dropped } = await heldAtOlderCentral();
    await offline.stop();
    const store = await startStore(central.url, acct.key, { dataDir: offline.dataDir });
    cleanup.push(() => store.stop());
    const later = await (async () => {
      const r = await http('POST', `${store.url}/api/bookings`, acct.key, {
        service_id: cut.id,
        starts_at: slot(2, 17),
        staff_member_id: stylist.id,
        customer,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body;
    })();
    await appliedAtCentral(store);
    // The slot freed by the held cancellation is taken by the new booking: applied in that order, no refusal.
    expect(
      outcomes(central)
        .filter((o) => o.kind === 'booking')
        .map((o) => o.outcome),
    ).toEqual(['applied', 'applied', 'applied', 'applied']);
    expect(await bookingAt(central, acct.key, kept.id)).toMatchObject({ status: 'confirmed' });
    expect(await bookingAt(central, acct.key, dropped.id)).toMatchObject({ status: 'cancelled' });
    expect(await bookingAt(central, acct.key, later.id)).toMatchObject({ status: 'confirmed', starts_at: dropped.starts_at });
    expect((await http('GET', `${central.url}/sync/stores`, acct.key)).body[0]).toMatchObject({
      store_id: store.storeId,
      held_records: 0,
      rejected_records: 0,
    });
  });
});
