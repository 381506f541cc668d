import { afterEach, describe, expect, it } from 'vitest';
import { syncStatus } from '../../src/sync/status.js';
import { recordHash } from '../../src/sync/wire.js';
import { addStoreAccount, http, pairStoreAndCentral, until } from './helpers.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('GET /sync/received (what the central holds of a store, for a restored store rejoining)', () => {
  it('answers the store its own records in seq order with their hashes, and no one else', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    for (const amount of [500, 600]) {
      expect((await http('POST', `${store.url}/api/cash_sales`, acct.key, { amount_in_cents: amount, currency: 'GTQ' })).status).toBe(201);
    }
    const { db } = store.daemon.ctx;
    await until('pushed', () => {
      const s = syncStatus(store.daemon.ctx.config, db);
      return s.records_waiting === 0 && s.acked_seq >= 4;
    });
    const outbox = db.prepare('SELECT seq, id, kind, account_id, live_mode, payload, created_at FROM sync_outbox ORDER BY seq').all() as Array<{
      seq: number;
      id: string;
      kind: string;
      account_id: string;
      live_mode: number;
      payload: string;
      created_at: string;
    }>;
    const storeId = syncStatus(store.daemon.ctx.config, db).store_id!;
    const last = outbox.at(-1)!.seq;

    const all = await http('GET', `${central.url}/sync/received?store_id=${storeId}`, acct.key);
    expect(all.status).toBe(200);
    expect(all.body.applied_seq).toBe(last);
    expect(all.body.records).toEqual(
      outbox.map((r) => ({
        seq: r.seq,
        id: r.id,
        kind: r.kind,
        account_id: r.account_id,
        live_mode: r.live_mode === 1,
        payload: JSON.parse(r.payload),
        created_at: r.created_at,
        hash: recordHash({ ...r, live_mode: r.live_mode === 1 }, r.payload),
      })),
    );
    // After a seq, and in pages.
    const page = await http('GET', `${central.url}/sync/received?store_id=${storeId}&after=${outbox[0].seq}&limit=2`, acct.key);
    expect(page.body.records.map((r: { id: string }) => r.id)).toEqual(outbox.slice(1, 3).map((r) => r.id));
    expect(page.body.applied_seq).toBe(last);

    // A store the central never heard of holds nothing; another account's key reads no one else's records.
    expect((await http('GET', `${central.url}/sync/received?store_id=store_unknown`, acct.key)).body).toMatchObject({ applied_seq: 0, records: [] });
    const other = addStoreAccount(central, 'Store 2');
    const foreign = await http('GET', `${central.url}/sync/received?store_id=${storeId}`, other.key);
    expect(foreign.status).toBe(403);
    expect(foreign.body.code).toBe('sync_store_mismatch');
    const anonymous = await http('GET', `${central.url}/sync/received?store_id=${storeId}`, null);
    expect(anonymous.status).toBe(401);
  });
});
