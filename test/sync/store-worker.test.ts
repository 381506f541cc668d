import { createConnection, createServer, type AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { tx } from '../../src/db/database.js';
import { appendSyncRecord } from '../../src/outbox/sync-records.js';
import type { PosdModule } from '../../src/api/module.js';
import { MODULES } from '../../src/modules/index.js';
import { syncStatus } from '../../src/sync/status.js';
import { reconcileDay } from '../../src/sync/store/reconcile.js';
import { CentralClient } from '../../src/sync/store/transport.js';
import { backoffDelay } from '../../src/sync/store/client.js';
import { AccountsService } from '../../src/accounts/service.js';
import type { TestServer } from '../helpers/server.js';
import { BACKDATED, addStoreAccount, http, removeDir, startCentral, startStore, until, type TestStore } from './helpers.js';

// A kind only this file knows, declared at the central by a module of its own.
const testSales: PosdModule = {
  name: 'test-sales',
  sync: {
    push: {
      test_sale: {
        apply(ctx, record) {
          ctx.db.exec('CREATE TABLE IF NOT EXISTS test_sales (id TEXT PRIMARY KEY, account_id TEXT, amount INTEGER, n INTEGER)');
          ctx.db
            .prepare('INSERT INTO test_sales (id, account_id, amount, n) VALUES (?, ?, ?, ?)')
            .run(record.id, record.account_id, record.payload.amount_in_cents, record.payload.n);
        },
      },
    },
  },
};

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function pair(sync: Record<string, unknown> = {}): Promise<{ central: TestServer; store: TestStore; acct: ReturnType<typeof addStoreAccount> }> {
  const central = await startCentral({ modules: [...MODULES, testSales], config: BACKDATED });
  cleanup.push(() => central.stop());
  const acct = addStoreAccount(central);
  const store = await startStore(central.url, acct.key, { sync });
  cleanup.push(() => removeDir(store.dataDir));
  cleanup.push(() => store.stop());
  return { central, store, acct };
}

/** A sale as the money module records it: the fact and its event in the transaction of the change. */
function sell(store: TestStore, accountId: string, n: number, createdAt = new Date().toISOString()): string {
  const ctx = store.daemon.ctx;
  return tx(ctx.db, () => {
    const id = `sync_sale${n}_${Math.random().toString(36).slice(2, 8)}`;
    appendSyncRecord(ctx.db, { id, kind: 'test_sale', accountId, liveMode: true, createdAt, payload: { n, amount_in_cents: 1000 + n, currency: 'GTQ' } });
    ctx.outbox.emit({ type: 'test_sale.created', accountId, liveMode: true, payload: { n }, objectId: id, createdAt });
    return id;
  });
}

const centralSales = (central: TestServer) =>
  central.daemon.ctx.db.prepare("SELECT count(*) AS c FROM sqlite_master WHERE name = 'test_sales'").get() as { c: number };
const saleRows = (central: TestServer) =>
  centralSales(central).c ? (central.daemon.ctx.db.prepare('SELECT n FROM test_sales ORDER BY rowid').all() as Array<{ n: number }>).map((r) => r.n) : [];

describe('the store sync worker', () => {
  it('joins with the same account ids; the central key works at the box; a key revoked at the central stops working after the next pull', async () => {
    const { central, store, acct } = await pair();
    const atBox = (key: string) =>
      request(`${store.url}/api/test`, { headers: { 'x-secret-key': key } }).then(async (r) => (await r.body.text(), r.statusCode));
    expect(await atBox(acct.key)).toBe(200);
    expect(await atBox(acct.testKey)).toBe(200);
    expect(new AccountsService(store.daemon.ctx.db, store.daemon.ctx.clock).account(acct.accountId)?.name).toBe('Store 1');
    // A key made at the central after the box joined arrives through the feed.
    const accounts = new AccountsService(central.daemon.ctx.db, central.daemon.ctx.clock);
    const later = accounts.createKey({ accountId: acct.accountId, environment: 'live' });
    await until('the new key at the box', async () => (await atBox(later.key)) === 200);
    accounts.revokeKey(later.prefix);
    await until('the revocation at the box', async () => (await atBox(later.key)) === 401);
    expect(await atBox(acct.key)).toBe(200);
  });

  it('pushes facts and events in order; each exists once at the central, events keep their ids', async () => {
    const { central, store, acct } = await pair({ batch_size: 7 });
    const ids = Array.from({ length: 40 }, (_, i) => sell(store, acct.accountId, i));
    await until('all pushed', () => syncStatus(store.daemon.ctx.config, store.daemon.ctx.db).records_waiting === 0 && saleRows(central).length === 40);
    expect(saleRows(central)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    const storeEvents = store.daemon.ctx.db.prepare("SELECT id FROM events WHERE type = 'test_sale.created' ORDER BY id").all();
    const centralEvents = central.daemon.ctx.db.prepare("SELECT id FROM events WHERE type = 'test_sale.created' ORDER BY id").all();
    expect(centralEvents).toEqual(storeEvents);
    expect(storeEvents).toHaveLength(40);
    expect(new Set(ids).size).toBe(40);
    const status = await http('GET', `${store.url}/sync/status`, acct.key);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ role: 'store', configured: true, connected: true, records_waiting: 0, last_error: null });
    expect(Math.abs(status.body.central_clock_offset_ms)).toBeLessThan(1000);
    expect((await http('GET', `${store.url}/sync/status`, null)).status).toBe(401);
  });

  it('keeps selling with the central down, reports it, and pushes everything in order once it is back (resuming after a restart)', async () => {
    const central = await startCentral({ modules: [...MODULES, testSales], config: BACKDATED });
    cleanup.push(() => central.stop());
    const acct = addStoreAccount(central);
    // Join through a port that is closed: the central is "down" for the whole offline day.
    const store0 = await startStore(central.url, acct.key, { sync: { central_url: 'http://127.0.0.1:9' } });
    cleanup.push(() => removeDir(store0.dataDir));
    const day = Date.parse('2026-03-02T08:00:00.000Z');
    for (let i = 0; i < 120; i++) sell(store0, acct.accountId, i, new Date(day + i * 5 * 60_000).toISOString());
    await until('an error noted', () => syncStatus(store0.daemon.ctx.config, store0.daemon.ctx.db).last_error);
    const offline = syncStatus(store0.daemon.ctx.config, store0.daemon.ctx.db);
    expect(offline.connected).toBe(false);
    expect(offline.records_waiting).toBeGreaterThanOrEqual(120);
    expect(offline.oldest_waiting_at).toBe('2026-03-02T08:00:00.000Z');
    await store0.stop();
    // The link is back: the box restarts with the real central and resumes from its stored cursor.
    const store = await startStore(central.url, acct.key, { dataDir: store0.dataDir, sync: { central_url: central.url, batch_size: 50 } });
    cleanup.push(() => store.stop());
    await until('all pushed', () => saleRows(central).length === 120);
    expect(saleRows(central)).toEqual(Array.from({ length: 120 }, (_, i) => i));
    await until('connected', () => syncStatus(store.daemon.ctx.config, store.daemon.ctx.db).connected);
  });

  it('logs once when the central answers again after the link went down (issue 37)', async () => {
    const central = await startCentral({ modules: [...MODULES, testSales], config: BACKDATED });
    cleanup.push(() => central.stop());
    const acct = addStoreAccount(central);
    // A link the test cuts and mends: a TCP relay that drops every connection while down.
    let down = false;
    const open = new Set<import('node:net').Socket>();
    const relay = createServer((c) => {
      if (down) return c.destroy();
      open.add(c);
      c.on('close', () => open.delete(c));
      const up = createConnection(Number(new URL(central.url).port), '127.0.0.1');
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    cleanup.push(() => new Promise<void>((r) => relay.close(() => r())));
    const lines: Array<{ msg: string; event?: string }> = [];
    const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    const via = `http://127.0.0.1:${(relay.address() as AddressInfo).port}`;
    const store = await startStore(via, acct.key, { sync: { central_url: via }, log });
    cleanup.push(() => removeDir(store.dataDir));
    cleanup.push(() => store.stop());
    await until('connected', () => syncStatus(store.daemon.ctx.config, store.daemon.ctx.db).connected);
    const back = () => lines.filter((l) => l.event === 'sync_link_up');
    expect(back()).toEqual([]);
    down = true;
    for (const c of open) c.destroy();
    // A request in flight as the link broke may still answer: count from when the loops are failing.
    const failures = () => lines.filter((l) => / failed$/.test(l.msg)).length;
    await until('failures logged', () => failures() >= 3);
    const before = back().length;
    const failed = failures();
    await until('one more failure', () => failures() > failed);
    expect(back()).toHaveLength(before);
    down = false;
    sell(store, acct.accountId, 1);
    await until('the sale at the central', () => saleRows(central).includes(1));
    await until('the line saying the central is back', () => back().length > before);
    sell(store, acct.accountId, 2);
    await until('the second sale at the central', () => saleRows(central).includes(2));
    expect(back()).toHaveLength(before + 1);
    expect(back().at(-1)?.msg).toBe('sync: the central answers again');
  });

  it('reconciles a day: equal when both sides agree; a lost row at the central is a difference, reported to central operations, never patched', async () => {
    const { central, store, acct } = await pair({ batch_size: 100 });
    const day = '2026-04-05';
    for (let i = 0; i < 10; i++) sell(store, acct.accountId, i, `${day}T1${i % 10}:00:00.000Z`);
    await until('pushed', () => saleRows(central).length === 10 && syncStatus(store.daemon.ctx.config, store.daemon.ctx.db).records_waiting === 0);
    const client = new CentralClient(central.url, acct.key, { timeoutMs: 5000 });
    cleanup.push(() => client.close());
    const ok = await reconcileDay(store.daemon.ctx, client, day);
    expect(ok.state).toBe('equal');
    expect(ok.rows.find((r) => r.measure === 'records.test_sale')).toMatchObject({
      store_count: 10,
      central_count: 10,
      store_sum: 10045,
      central_sum: 10045,
      currency: 'GTQ',
    });
    expect(ok.rows.find((r) => r.measure === 'events')).toMatchObject({ store_count: 10, central_count: 10 });
    // An event lost at the central (a restore, a bad hand): the totals no longer agree.
    central.daemon.ctx.db.prepare("DELETE FROM events WHERE id = (SELECT id FROM events WHERE type = 'test_sale.created' LIMIT 1)").run();
    const diff = await reconcileDay(store.daemon.ctx, client, day);
    expect(diff.state).toBe('different');
    expect(diff.differences).toEqual([expect.objectContaining({ measure: 'events', store_count: 10, central_count: 9 })]);
    const status = syncStatus(store.daemon.ctx.config, store.daemon.ctx.db);
    expect(status.reconciliation.state).toBe('different');
    await until('reported to central operations', () =>
      central.daemon.ctx.db.prepare("SELECT payload FROM events WHERE type = 'sync.reconciliation_difference'").get(),
    );
    // Nothing was patched: the central still lacks the event.
    expect((central.daemon.ctx.db.prepare("SELECT count(*) AS n FROM events WHERE type = 'test_sale.created'").get() as { n: number }).n).toBe(9);
  });

  it('warns when the central clock differs by more than a minute', async () => {
    const { store } = await pair();
    const ctx = store.daemon.ctx;
    await until('an offset measured', () => syncStatus(ctx.config, ctx.db).central_clock_offset_ms !== null);
    expect(syncStatus(ctx.config, ctx.db).warnings).toEqual([]);
    ctx.db.prepare("UPDATE sync_state SET value = '-95000' WHERE key = 'clock_offset_ms'").run();
    expect(syncStatus(ctx.config, ctx.db).warnings).toEqual([expect.stringContaining('-95 s')]);
  });

  it('backs off exponentially with jitter, capped', () => {
    expect(backoffDelay(0, 100, 10_000, () => 0)).toBe(50);
    expect(backoffDelay(3, 100, 10_000, () => 1)).toBe(800);
    expect(backoffDelay(3, 100, 10_000, () => 0)).toBe(400);
    expect(backoffDelay(40, 100, 10_000, () => 1)).toBe(10_000);
  });
});
