import { afterEach, describe, expect, it } from 'vitest';
import { syncStatus } from '../../src/sync/status.js';
import { recordHash } from '../../src/sync/shared/wire.js';
import { addStoreAccount, http, pairStoreAndCentral, until } from './helpers.js';
import { openDatabase } from '../../src/db/database.js';
import { databaseFile } from '../../src/db/paths.js';
import { STATE, syncState } from '../../src/sync/shared/state.js';
import { CentralClient } from '../../src/sync/store/transport.js';
import { centralHoldings, holdingsAtCursor, planRejoin } from '../../src/sync/store/rejoin.js';

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

describe('a rejoin question that another process answers first (issue 16: no false restore)', () => {
  it('asks again when this box acknowledged more while the question was out, and plans nothing to rebuild', async () => {
    const { central, store, acct } = await pairStoreAndCentral(cleanup);
    for (const amount of [700, 800]) {
      expect((await http('POST', `${store.url}/api/cash_sales`, acct.key, { amount_in_cents: amount, currency: 'GTQ' })).status).toBe(201);
    }
    const { db, config } = store.daemon.ctx;
    await until('pushed', () => {
      const s = syncStatus(config, db);
      return s.records_waiting === 0 && s.acked_seq >= 4;
    });
    const pushed = syncStatus(config, db).acked_seq;
    const storeId = syncStatus(config, db).store_id!;
    await store.daemon.stop();
    const file = openDatabase(databaseFile(config));
    cleanup.push(() => {
      file.close();
    });
    // As `posd sync now` saw it: its question goes out at cursor 0, and the daemon's push lands
    // (cursor `pushed`) before the answer comes back.
    syncState(file).setState(STATE.ackedSeq, 0);
    const client = new CentralClient(central.url, acct.key, { timeoutMs: 5000 });
    cleanup.push(() => client.close());
    const asked: number[] = [];
    const received = client.received.bind(client);
    client.received = async (id, after, limit, signal) => {
      asked.push(after);
      const answer = await received(id, after, limit, signal);
      if (asked.length === 1) syncState(file).setState(STATE.ackedSeq, pushed);
      return answer;
    };

    const stale = await centralHoldings(client, storeId, 0);
    expect(planRejoin(file, stale)).toMatchObject({ rebuild: true, takenBack: pushed }); // what the old question planned

    syncState(file).setState(STATE.ackedSeq, 0);
    asked.length = 0;
    const held = await holdingsAtCursor(file, client, storeId);
    expect(asked).toEqual([0, pushed]);
    expect(held.records).toEqual([]);
    expect(planRejoin(file, held)).toMatchObject({ rebuild: false, takenBack: 0, moved: 0 });
  });
});
