import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Statement } from 'better-sqlite3';
import type { PosdModule } from '../../src/api/module.js';
import { MODULES } from '../../src/modules/index.js';
import { openDatabase, tx, type Db } from '../../src/db/database.js';
import { databaseFile } from '../../src/db/paths.js';
import { accountsOf } from '../../src/accounts/service.js';
import { appendFeedChange } from '../../src/outbox/feed-changes.js';
import { applyPush, centralSummary, syncScope } from '../../src/sync/central/service.js';
import { feedWatch } from '../../src/sync/central/feed-watch.js';
import { centralSide } from '../../src/sync/central/sync-store.js';
import { projected } from '../../src/sync/central/projector.js';
import type { PushBody } from '../../src/sync/shared/wire.js';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, http, startCentral, until } from './helpers.js';

// Kinds only this file knows: a cheap applier (so a push's cost is the sync engine's, not a
// module's) and one that tells the test which records it applied, in which order.
const tracked: number[] = [];
let firstTracked: () => void = () => {};
const testModule: PosdModule = {
  name: 'test-scale',
  sync: {
    push: {
      test_note: {
        apply(ctx, record) {
          ctx.db.prepare('INSERT INTO test_scale_notes (id, amount) VALUES (?, ?)').run(record.id, record.payload.amount_in_cents);
        },
      },
      test_tracked: {
        apply(ctx, record) {
          tracked.push(record.seq);
          if (tracked.length === 1) firstTracked();
          ctx.db.prepare('INSERT INTO test_scale_notes (id, amount) VALUES (?, ?)').run(record.id, 1);
        },
      },
    },
  },
};

const HISTORY = 200_000;
let old: TestServer;
let empty: TestServer;
let oldAcct: ReturnType<typeof addStoreAccount>;
let emptyAcct: ReturnType<typeof addStoreAccount>;

async function central(): Promise<TestServer> {
  const c = await startCentral({ modules: [...MODULES, testModule] });
  c.daemon.ctx.db.exec('CREATE TABLE test_scale_notes (id TEXT PRIMARY KEY, amount INTEGER)');
  return c;
}

beforeAll(async () => {
  old = await central();
  empty = await central();
  oldAcct = addStoreAccount(old);
  emptyAcct = addStoreAccount(empty);
  // 200,000 records of one store's history, about 200 days of it, written set-based (a push per
  // record would take minutes): nearly all applied, some rejected, a few parked, and three held
  // of a kind this central has no applier for (each push reads them first and passes them by).
  const db = old.daemon.ctx.db;
  tx(db, () => {
    centralSide(db).ensureStore('store_old', oldAcct.accountId, true, '2025-01-01T00:00:00.000Z');
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @history)
       INSERT INTO sync_received (id, store_id, seq, account_id, live_mode, kind, hash, payload, created_at, received_at, outcome, reason)
       SELECT 'sync_hist' || i, 'store_old', i, @account, 1,
         CASE WHEN i % 70000 = 11 THEN 'test_unknown' WHEN i % 2 = 0 THEN 'event' ELSE 'test_note' END,
         'hash' || i, '{"id":"evt_' || i || '","amount_in_cents":100}',
         strftime('%Y-%m-%dT%H:%M:%fZ', 1735689600 + i * 86, 'unixepoch'), strftime('%Y-%m-%dT%H:%M:%fZ', 1735689600 + i * 86, 'unixepoch'),
         CASE WHEN i % 70000 = 11 THEN 'held' WHEN i % 50000 = 7 THEN 'parked' WHEN i % 1000 = 0 THEN 'rejected' ELSE 'applied' END,
         NULL
       FROM n`,
    ).run({ history: HISTORY, account: oldAcct.accountId });
    db.prepare('UPDATE sync_stores SET received_seq = ?, applied_seq = ? WHERE store_id = ?').run(HISTORY, HISTORY, 'store_old');
  });
}, 120_000);
afterAll(async () => {
  await old?.stop();
  await empty?.stop();
});

const cleanup: Array<() => void> = [];
afterEach(() => {
  for (const fn of cleanup.splice(0).reverse()) fn();
});

let n = 0;
function records(kind: string, fromSeq: number, count: number, accountId: string): PushBody['records'] {
  return Array.from({ length: count }, (_, i) => ({
    seq: fromSeq + i,
    prev_seq: fromSeq + i - 1,
    id: `sync_scale${++n}`,
    kind,
    account_id: accountId,
    live_mode: true,
    payload: { amount_in_cents: 100 + i, currency: 'GTQ' },
    created_at: new Date().toISOString(),
  }));
}

function pusher(server: TestServer, accountId: string) {
  const ctx = server.daemon.ctx;
  const keyAccount = accountsOf(ctx).account(accountId)!;
  const scope = syncScope(accountsOf(ctx), keyAccount);
  return (storeId: string, recs: PushBody['records']) => applyPush(ctx, keyAccount, scope, { protocol: 1, store_id: storeId, records: recs });
}

/** What SQLite plans for a statement: one line per step ("SEARCH ... USING INDEX", "SCAN ..."). */
function plan(db: Db, stmt: Statement, ...params: unknown[]): string[] {
  return (db.prepare(`EXPLAIN QUERY PLAN ${stmt.source}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

describe('a push to a central holding 200,000 records of its store’s history', () => {
  it('reads none of that history: every statement of the push and of reconciliation is an index search', () => {
    const db = old.daemon.ctx.db;
    const s = (centralSide(db) as unknown as { s: Record<string, Statement> }).s;
    const day = { from: '2025-03-01T00:00:00.000Z', until: '2025-03-02T00:00:00.000Z' };
    const plans: Record<string, string[]> = {
      getStore: plan(db, s.getStore, 'store_old'),
      heldOf: plan(db, s.heldOf, 'store_old'),
      receivedAt: plan(db, s.receivedAt, 'store_old', 5),
      received: plan(db, s.received, 'sync_x'),
      setReceived: plan(db, s.setReceived, HISTORY, day.from, 0, null, 'store_old'),
      // The projector's statements: its slice's records past the cursor, and their outcome set in one go.
      receivedAfter: plan(db, s.receivedAfter, 'store_old', HISTORY - 100, 100),
      markApplied: plan(db, s.markApplied, 'store_old', HISTORY - 100, HISTORY),
      setApplied: plan(db, s.setApplied, HISTORY, 'store_old'),
      receivedDay: plan(db, s.receivedDay, 'store_old', day.from, day.until),
      centralEventsDay: plan(db, s.centralEventsDay, 'store_old', day.from, day.until, day.from, day.until),
    };
    for (const [name, steps] of Object.entries(plans)) {
      expect(steps.length, name).toBeGreaterThan(0);
      for (const step of steps) expect(step, `${name}: ${steps.join(' | ')}`).not.toMatch(/^SCAN/);
    }
    // The day's records, by the day-first index; the held rows by their partial index.
    expect(plans.receivedDay.join()).toMatch(/sync_received_day \(store_id=\? AND created_at>\? AND created_at<\?\)/);
    expect(plans.heldOf.join()).toMatch(/sync_received_held \(store_id=\?\)/);
    expect(plans.receivedAfter.join()).toMatch(/\(store_id=\? AND seq>\?\)/);
    expect(plans.markApplied.join()).toMatch(/\(store_id=\? AND seq>\? AND seq<\?\)/);
    // GET /sync/stores reads the stores' own rows (their counters), never the records.
    expect(plan(db, s.listStores).join()).not.toMatch(/sync_received/);
  });

  it('costs what it costs at an empty central, received and applied (medians of interleaved pushes, within 2x)', async () => {
    const pushOld = pusher(old, oldAcct.accountId);
    const pushEmpty = pusher(empty, emptyAcct.accountId);
    const times = { old: [] as number[], empty: [] as number[] };
    let seqOld = HISTORY + 1;
    let seqEmpty = 1;
    // Interleaved, so a loaded box slows both sides alike; the first rounds warm both up.
    for (let round = 0; round < 45; round++) {
      // Each timed from the push to its records applied by the projector.
      let t = performance.now();
      const a = await pushOld('store_old', records('test_note', seqOld, 4, oldAcct.accountId));
      await projected(old.daemon.ctx);
      const tOld = performance.now() - t;
      t = performance.now();
      const b = await pushEmpty('store_new', records('test_note', seqEmpty, 4, emptyAcct.accountId));
      await projected(empty.daemon.ctx);
      const tEmpty = performance.now() - t;
      expect([a.applied, b.applied]).toEqual([4, 4]);
      seqOld += 4;
      seqEmpty += 4;
      if (round >= 5) {
        times.old.push(tOld);
        times.empty.push(tEmpty);
      }
    }
    // Before the partial index this was about 150x (165 ms against 1.1 ms).
    expect(median(times.old)).toBeLessThan(2 * median(times.empty));
  }, 60_000);

  it('GET /sync/stores answers the outcome counters, which the rows keep through retry and skip', async () => {
    const db = old.daemon.ctx.db;
    const truth = (outcome: string) =>
      (db.prepare('SELECT count(*) AS n FROM sync_received WHERE store_id = ? AND outcome = ?').get('store_old', outcome) as { n: number }).n;
    const listed = async () => (await http('GET', `${old.url}/sync/stores`, oldAcct.key)).body.find((s: { store_id: string }) => s.store_id === 'store_old');
    expect(await listed()).toMatchObject({ held_records: 3, rejected_records: 200, parked_records: 4, skipped_records: 0 });
    const parked = db.prepare("SELECT id FROM sync_received WHERE store_id = 'store_old' AND outcome = 'parked' ORDER BY seq").pluck().all() as string[];
    const store = centralSide(db);
    expect(store.skip(parked[0], 'counted by hand', '2026-03-02T10:00:00.000Z')).toBe(true);
    expect(store.retry(parked[1])).toBe(true);
    const row = await listed();
    // The retried record is held until the projector's next pass applies it (its kind has an applier).
    expect(row).toMatchObject({ rejected_records: 200, parked_records: 2, skipped_records: 1 });
    expect([3, 4]).toContain(row.held_records);
    expect([row.held_records, row.rejected_records, row.parked_records, row.skipped_records]).toEqual([
      truth('held'),
      truth('rejected'),
      truth('parked'),
      truth('skipped'),
    ]);
  });

  it('reconciles one day of that store from that day’s records', () => {
    const { rows } = centralSummary(old.daemon.ctx, 'store_old', '2025-03-01');
    const facts = rows.find((r) => r.measure === 'records.test_note');
    // One record every 86 s, half of them test_note: about 500 on that day (not 100,000).
    expect(facts?.count).toBeGreaterThan(450);
    expect(facts?.count).toBeLessThan(550);
  });
});

describe('a big push at the central', () => {
  it('is answered once received; the central’s API answers while the projector applies it, every record once, in order', async () => {
    tracked.length = 0;
    const started = new Promise<void>((resolve) => (firstTracked = resolve));
    const res = await pusher(empty, emptyAcct.accountId)('store_big', records('test_tracked', 1, 5000, emptyAcct.accountId));
    expect(res).toMatchObject({ applied_seq: 5000, applied: 5000, duplicates: 0 });
    const db = empty.daemon.ctx.db;
    expect(centralSide(db).storeRow('store_big')?.received_seq).toBe(5000);
    await started;
    const account = await empty.api('GET', '/account', { key: emptyAcct.key });
    const appliedWhenAnswered = tracked.length;
    expect(account.status).toBe(200);
    expect(appliedWhenAnswered).toBeLessThan(5000);
    await projected(empty.daemon.ctx);
    expect(tracked).toEqual(Array.from({ length: 5000 }, (_, i) => i + 1));
    expect(db.prepare("SELECT count(*) FROM sync_received WHERE store_id = 'store_big'").pluck().get()).toBe(5000);
    expect(centralSide(db).storeRow('store_big')?.applied_seq).toBe(5000);
  });

  it('takes two pushes of one store one after the other: a retry racing its original applies nothing twice', async () => {
    const push = pusher(empty, emptyAcct.accountId);
    const batch = records('test_note', 1, 1000, emptyAcct.accountId);
    const [first, retry] = await Promise.all([push('store_race', batch), push('store_race', batch)]);
    expect(first).toMatchObject({ applied_seq: 1000, applied: 1000, duplicates: 0 });
    expect(retry).toMatchObject({ applied_seq: 1000, applied: 0, duplicates: 1000 });
    await projected(empty.daemon.ctx);
    expect(empty.daemon.ctx.db.prepare("SELECT outcome, count(*) AS n FROM sync_received WHERE store_id = 'store_race' GROUP BY outcome").all()).toEqual([
      { outcome: 'applied', n: 1000 },
    ]);
    expect(empty.daemon.ctx.db.prepare("SELECT count(*) FROM sync_received WHERE store_id = 'store_race'").pluck().get()).toBe(1000);
  });
});

describe('the feed’s long-poll at the central', () => {
  const feed = (after: number, waitMs: number) => http('GET', `${empty.url}/sync/feed?after=${after}&wait_ms=${waitMs}&store_id=store_poll`, emptyAcct.key);
  const cursorNow = async () => (await http('GET', `${empty.url}/sync/feed?after=0&wait_ms=0&limit=5000`, emptyAcct.key)).body.cursor as number;
  const publish = (db: Db, objectId: string) =>
    tx(db, () =>
      appendFeedChange(db, {
        kind: 'product',
        accountId: emptyAcct.accountId,
        liveMode: true,
        objectId,
        payload: { id: objectId },
        createdAt: new Date().toISOString(),
      }),
    );

  it('answers when a feed row is written in the central’s process, after one more read', async () => {
    const db = empty.daemon.ctx.db;
    const after = await cursorNow();
    const reads = vi.spyOn(centralSide(db), 'feedAfter');
    cleanup.push(() => reads.mockRestore());
    const waiting = feed(after, 20_000);
    await until('the long-poll waits', () => feedWatch(db).waiting === 1);
    expect(reads).toHaveBeenCalledTimes(1);
    publish(db, 'prod_bell');
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.body.changes.map((c: { object_id: string }) => c.object_id)).toEqual(['prod_bell']);
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('answers when another connection writes a feed row (a key revoked by `posd keys revoke`)', async () => {
    const db = empty.daemon.ctx.db;
    const after = await cursorNow();
    const waiting = feed(after, 20_000);
    await until('the long-poll waits', () => feedWatch(db).waiting === 1);
    const other = openDatabase(databaseFile(empty.config));
    cleanup.push(() => other.close());
    const prefix = other.prepare('SELECT prefix FROM api_keys WHERE account_id = ? AND revoked_at IS NULL').pluck().get(emptyAcct.sandboxId) as string;
    other.prepare('UPDATE api_keys SET revoked_at = ? WHERE prefix = ?').run(new Date().toISOString(), prefix);
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.body.changes).toEqual([expect.objectContaining({ kind: 'api_key', account_id: emptyAcct.sandboxId })]);
  });

  it('idle long-polls read the feed once each, however long they wait', async () => {
    const db = empty.daemon.ctx.db;
    const after = await cursorNow();
    const watch = feedWatch(db);
    const reads = vi.spyOn(centralSide(db), 'feedAfter');
    cleanup.push(() => reads.mockRestore());
    const ticks = watch.stats.ticks;
    const polls = Array.from({ length: 5 }, () => feed(after, 1500));
    // The watch's timer runs while they wait (several 250 ms ticks); the answers come at the deadline.
    await until('the watch ticked while they waited', () => watch.stats.ticks >= ticks + 3);
    const answers = await Promise.all(polls);
    for (const a of answers) expect(a.body).toMatchObject({ changes: [], cursor: after });
    expect(reads).toHaveBeenCalledTimes(5);
    expect(watch.waiting).toBe(0);
  });
});
