/**
 * Issue 37: a store's day is its local day, at the box and at the central alike. Sales made either
 * side of local midnight (an injected clock) in two zones far from UTC, Pacific/Auckland (UTC+12 in
 * June) and America/Los_Angeles (UTC-7), are compared by `reconcileDay` over that zone's day, which
 * the central sums from the zone the store names: both sides count the same sales, and each zone
 * counts a different set than the UTC day would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../devices/index.js';
import { dateIn, localDayRange } from '../../src/sync/shared/summary.js';
import { reconcileDay } from '../../src/sync/store/reconcile.js';
import { CentralClient } from '../../src/sync/store/transport.js';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, appliedAtCentral, BACKDATED, http, removeDir, startCentral, startStore, type TestStore } from './helpers.js';

describe("a day's span in a zone", () => {
  it('is midnight to midnight there: 24 h, and 23 or 25 h on the days the clocks change', () => {
    expect(localDayRange('2026-06-05', 'Pacific/Auckland')).toEqual({ from: '2026-06-04T12:00:00.000Z', until: '2026-06-05T12:00:00.000Z' });
    expect(localDayRange('2026-06-05', 'America/Los_Angeles')).toEqual({ from: '2026-06-05T07:00:00.000Z', until: '2026-06-06T07:00:00.000Z' });
    expect(localDayRange('2026-06-05', 'UTC')).toEqual({ from: '2026-06-05T00:00:00.000Z', until: '2026-06-06T00:00:00.000Z' });
    expect(localDayRange('2026-06-05', 'Asia/Kathmandu')).toEqual({ from: '2026-06-04T18:15:00.000Z', until: '2026-06-05T18:15:00.000Z' });
    const hours = (r: { from: string; until: string }) => (Date.parse(r.until) - Date.parse(r.from)) / 3_600_000;
    expect(hours(localDayRange('2026-09-27', 'Pacific/Auckland'))).toBe(23);
    expect(hours(localDayRange('2026-04-05', 'Pacific/Auckland'))).toBe(25);
    expect(hours(localDayRange('2026-03-08', 'America/Los_Angeles'))).toBe(23);
    expect(hours(localDayRange('2026-11-01', 'America/Los_Angeles'))).toBe(25);
    // Santiago's clocks jump from 00:00 to 01:00: the day begins at 01:00 there.
    expect(localDayRange('2026-09-06', 'America/Santiago').from).toBe('2026-09-06T04:00:00.000Z');
    // A date the zone skipped (Samoa crossed the date line): an empty span.
    const skipped = localDayRange('2011-12-30', 'Pacific/Apia');
    expect(skipped.from).toBe(skipped.until);
    expect(dateIn(Date.parse('2026-06-05T12:30:00.000Z'), 'Pacific/Auckland')).toBe('2026-06-06');
    expect(dateIn(Date.parse('2026-06-06T06:30:00.000Z'), 'America/Los_Angeles')).toBe('2026-06-05');
  });
});

describe("reconciliation compares the store's local day", () => {
  // Four sales: 11:30Z and 12:30Z on the 5th (23:30 and 00:30 in Auckland), 06:30Z and 07:30Z on
  // the 6th (23:30 and 00:30 in Los Angeles).
  const SALES = ['2026-06-05T11:30:00.000Z', '2026-06-05T12:30:00.000Z', '2026-06-06T06:30:00.000Z', '2026-06-06T07:30:00.000Z'];
  const clock = new ManualClock(Date.parse(SALES[0]));
  let central: TestServer;
  let store: TestStore;
  let client: CentralClient;

  beforeAll(async () => {
    central = await startCentral({ clock, config: BACKDATED });
    const acct = addStoreAccount(central);
    store = await startStore(central.url, acct.key, { clock });
    for (const [i, at] of SALES.entries()) {
      clock.advance(Date.parse(at) - clock.now());
      const res = await http('POST', `${store.url}/api/cash_sales`, acct.key, { amount_in_cents: 1000 * (i + 1), currency: 'GTQ', description: `Sale ${i}` });
      expect(res.status).toBe(201);
      expect(res.body.created_at).toBe(at);
    }
    await appliedAtCentral(store);
    client = new CentralClient(central.url, acct.key, { timeoutMs: 5000 });
  });

  afterAll(async () => {
    await client?.close();
    await store?.stop();
    if (store) removeDir(store.dataDir);
    await central?.stop();
  });

  const cases: Array<[zone: string, day: string, sales: number[]]> = [
    ['Pacific/Auckland', '2026-06-05', [1]],
    ['Pacific/Auckland', '2026-06-06', [2, 3, 4]],
    ['America/Los_Angeles', '2026-06-05', [1, 2, 3]],
    ['America/Los_Angeles', '2026-06-06', [4]],
    ['UTC', '2026-06-05', [1, 2]],
  ];
  for (const [zone, day, sales] of cases) {
    it(`${zone} ${day}: both sides count sales ${sales.join(', ')}, midnight to midnight there`, async () => {
      const rec = await reconcileDay(store.daemon.ctx, client, day, undefined, zone);
      expect(rec).toMatchObject({ state: 'equal', day, zone, ...localDayRange(day, zone) });
      expect(rec.rows.find((r) => r.measure === 'records.cash_sale')).toMatchObject({
        store_count: sales.length,
        central_count: sales.length,
        store_sum: sales.reduce((n, s) => n + 1000 * s, 0),
        central_sum: sales.reduce((n, s) => n + 1000 * s, 0),
      });
    });
  }

  it("the central sums the zone the store names, not its own (this process's is UTC)", async () => {
    expect(Intl.DateTimeFormat().resolvedOptions().timeZone).toBe('UTC');
    const storeId = store.storeId;
    const answer = await client.reconcile(storeId, '2026-06-06', 'Pacific/Auckland');
    expect(answer).toMatchObject({ zone: 'Pacific/Auckland', from: '2026-06-05T12:00:00.000Z', until: '2026-06-06T12:00:00.000Z' });
    expect(answer.rows.find((r) => r.measure === 'records.cash_sale')).toMatchObject({ count: 3, sum: 9000 });
    // A zone it does not know: it says it summed the UTC day, and the store then sums that day too.
    const unknown = await client.reconcile(storeId, '2026-06-06', 'Mars/Olympus_Mons');
    expect(unknown).toMatchObject({ zone: 'UTC', from: '2026-06-06T00:00:00.000Z', until: '2026-06-07T00:00:00.000Z' });
    const rec = await reconcileDay(store.daemon.ctx, client, '2026-06-06', undefined, 'Mars/Olympus_Mons');
    expect(rec).toMatchObject({ state: 'equal', zone: 'UTC', from: '2026-06-06T00:00:00.000Z' });
    expect(rec.rows.find((r) => r.measure === 'records.cash_sale')).toMatchObject({ store_count: 2, central_count: 2 });
  });
});
