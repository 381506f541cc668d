import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type pg from 'pg';
import { startPgCluster, type PgCluster } from '../../helpers/pg-cluster.js';
import { openDatabase, type Db } from '../../../src/db/database.js';
import { centralSide } from '../../../src/sync/central/sync-store.js';
import { coreFeedSource, createPool, feedAfter, FeedRelay, FeedWaiter, migrate, notifyPayloads, pollFeed, type FeedScope } from '../../../src/sync/pg/index.js';

let cluster: PgCluster;
let pool: pg.Pool;
let dir: string;
/** The core's SQLite file: its sync_feed is the outbox the relay copies. */
let db: Db;
let relay: FeedRelay;
let waiter: FeedWaiter;

const scopeA: FeedScope = { accountIds: ['ac_a', 'sbx_a'], organizationId: 'org_a', storeId: 'st_a' };
const scopeB: FeedScope = { accountIds: ['ac_b'], organizationId: 'org_b', storeId: 'st_b' };

function coreChange(org: string, account: string | null, kind: string, extra: { origin?: string; to?: string } = {}): void {
  const store = centralSide(db);
  store.insertFeed({
    organization_id: org,
    account_id: account,
    live_mode: 1,
    kind,
    object_id: `obj_${kind}`,
    payload: JSON.stringify({ kind, n: 1 }),
    created_at: '2026-11-27T10:00:00.000Z',
    to_store_id: extra.to ?? null,
  });
  if (extra.origin) db.prepare('UPDATE sync_feed SET origin_store_id = ? WHERE seq = (SELECT max(seq) FROM sync_feed)').run(extra.origin);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'posd-pg-feed-'));
  db = openDatabase(join(dir, 'core.db'));
  cluster = await startPgCluster();
  pool = createPool({ ...cluster.config(), max: 6 });
  await migrate(pool);
  relay = new FeedRelay(pool, coreFeedSource(db), 100);
  // The fallback timer is far off: a wake-up in these tests can only come from a notification.
  waiter = new FeedWaiter(cluster.config(), { fallbackMs: 600_000 });
  await waiter.start();
});

afterAll(async () => {
  relay?.stop();
  await waiter?.stop();
  await pool?.end();
  await cluster?.stop();
  db?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the feed relay and the LISTEN doorbell', () => {
  test('the relay copies the core feed by seq, once, even with two relays at once; a scope reads its rows only', async () => {
    coreChange('org_a', 'ac_a', 'product');
    coreChange('org_a', null, 'organization');
    coreChange('org_b', 'ac_b', 'product');
    coreChange('org_a', 'ac_a', 'cash_sale', { origin: 'st_a' });
    coreChange('org_a', 'ac_a', 'record_rejected', { to: 'st_other' });
    coreChange('org_a', 'sbx_a', 'price');
    const second = new FeedRelay(pool, coreFeedSource(db), 2);
    const [n1, n2] = await Promise.all([relay.poke(), second.poke()]);
    // Each relay starts after what PostgreSQL already holds when it first looks: the first to look
    // finds nothing and reads all six; the other reads all six too or starts after the first's
    // commit (on a loaded machine). Either way each row is copied once (below).
    expect(Math.max(n1, n2)).toBe(6);
    const copied = (await pool.query('SELECT position, organization_id, account_id, kind, origin_store_id, to_store_id FROM sync_feed ORDER BY position')).rows;
    expect(copied.map((r) => r.position)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(copied[3]).toMatchObject({ kind: 'cash_sale', origin_store_id: 'st_a', to_store_id: null });

    const a = await feedAfter(pool, scopeA, 0, 100);
    // Its accounts' rows and its organization's account-less row; not its own push's echo, not another box's refusal.
    expect(a.changes.map((c) => c.kind)).toEqual(['product', 'organization', 'price']);
    expect(a.changes[0]).toMatchObject({ seq: 1, account_id: 'ac_a', organization_id: 'org_a', live_mode: true, payload: { kind: 'product', n: 1 } });
    expect(a.cursor).toBe(6);
    const page = await feedAfter(pool, scopeA, 0, 2);
    expect(page.changes.map((c) => c.seq)).toEqual([1, 2]);
    expect(page.cursor).toBe(2);
    // An older box (no store id) gets every row of its scope, refusals for other boxes included.
    expect((await feedAfter(pool, { ...scopeA, storeId: '' }, 0, 100)).changes.length).toBe(5);
    expect((await feedAfter(pool, scopeB, 0, 100)).changes.map((c) => c.seq)).toEqual([3]);
    second.stop();
  });

  test('a waiting long-poll is woken by the relay’s notification within milliseconds, not by a timer', async () => {
    const start = await feedAfter(pool, scopeA, 0, 1000);
    const waitingNow = once(waiter, 'waiting');
    const t0 = performance.now();
    const poll = pollFeed(pool, waiter, scopeA, start.cursor, 100, 20_000);
    await waitingNow;
    const before = { ...waiter.stats };
    coreChange('org_a', 'ac_a', 'booking');
    const committed = performance.now();
    await relay.poke();
    const page = await poll;
    const delay = performance.now() - committed;
    expect(page.changes.map((c) => c.kind)).toEqual(['booking']);
    expect(page.cursor).toBe(7);
    expect(waiter.stats.wakes).toBe(before.wakes + 1);
    expect(waiter.stats.fallbacks).toBe(0);
    // Far below the 20 s wait and the fallback: the doorbell rang (a few ms here; generous for a loaded CI box).
    expect(delay).toBeLessThan(1000);
    expect(performance.now() - t0).toBeLessThan(5000);
    console.log(`feed delay, SQLite commit -> relay -> NOTIFY -> poll answered: ${delay.toFixed(1)} ms`);
  });

  test('a notification wakes only the polls of the organizations it names', async () => {
    const cursorB = (await feedAfter(pool, scopeB, 0, 1000)).cursor;
    const abort = new AbortController();
    const waitingB = once(waiter, 'waiting');
    const pollB = pollFeed(pool, waiter, scopeB, cursorB, 100, 20_000, abort.signal);
    await waitingB;
    const cursorA = (await feedAfter(pool, scopeA, 0, 1000)).cursor;
    const waitingA = once(waiter, 'waiting');
    const pollA = pollFeed(pool, waiter, scopeA, cursorA, 100, 20_000);
    await waitingA;
    expect(waiter.waiting).toBe(2);
    coreChange('org_a', 'ac_a', 'coupon');
    await relay.poke();
    expect((await pollA).changes.map((c) => c.kind)).toEqual(['coupon']);
    // org_b's poll never woke: still waiting on its own organization.
    expect(waiter.waiting).toBe(1);
    abort.abort();
    const b = await pollB;
    expect(b.changes).toEqual([]);
    // Its cursor passed org_a's row, which it may skip.
    expect(b.cursor).toBeGreaterThanOrEqual(cursorB);
  });

  test('when the LISTEN connection is cut, it reconnects and wakes every waiting poll; notifications flow again', async () => {
    const cursor = (await feedAfter(pool, scopeB, 0, 1000)).cursor;
    const waiting = once(waiter, 'waiting');
    const abort = new AbortController();
    const poll = pollFeed(pool, waiter, scopeB, cursor, 100, 20_000, abort.signal);
    await waiting;
    const reconnected = once(waiter, 'reconnected');
    const rewait = once(waiter, 'waiting');
    await pool.query('SELECT pg_terminate_backend($1)', [await waiter.pid()]);
    await reconnected;
    // Woken by the reconnection, the poll re-read (nothing new for org_b) and waits again.
    await rewait;
    expect(waiter.stats.reconnects).toBe(1);
    coreChange('org_b', 'ac_b', 'product');
    await relay.poke();
    const page = await poll;
    expect(page.changes.map((c) => c.kind)).toEqual(['product']);
    abort.abort();
  });

  test('a batch naming many organizations rings in several notifications, each under 8,000 bytes', async () => {
    const orgs = Array.from({ length: 700 }, (_, i) => `org_${String(i).padStart(20, '0')}`);
    const payloads = notifyPayloads(orgs);
    expect(payloads.length).toBeGreaterThan(1);
    for (const p of payloads) expect(Buffer.byteLength(p)).toBeLessThan(8000);
    expect(payloads.join(',').split(',')).toEqual(orgs);

    // One batch of the 700 rows: a relay reading 1,000 rows at a time.
    const wide = new FeedRelay(pool, coreFeedSource(db), 1000);
    const heard = waiter.stats.notifications;
    const last = orgs[orgs.length - 1];
    const cursor = (await feedAfter(pool, { accountIds: [], organizationId: last, storeId: '' }, 0, 1)).cursor;
    const waiting = once(waiter, 'waiting');
    const poll = pollFeed(pool, waiter, { accountIds: [], organizationId: last, storeId: '' }, cursor, 10, 20_000);
    await waiting;
    db.transaction(() => {
      for (const o of orgs) coreChange(o, null, 'organization');
    })();
    await wide.poke();
    expect((await poll).changes.map((c) => c.organization_id)).toEqual([last]);
    expect(wide.stats).toMatchObject({ batches: 1, rows: 700, notifications: payloads.length });
    // Every notification reached the listener (the last one woke the poll; the others may still be in flight).
    expect(waiter.stats.notifications - heard).toBeGreaterThanOrEqual(1);
  });
});
