import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PosdModule } from '../../src/api/module.js';
import { MODULES, buildRegistry } from '../../src/modules/index.js';
import { tx } from '../../src/db/database.js';
import { applyHeldRecords, projected } from '../../src/sync/central/projector.js';
import { AccountsService } from '../../src/accounts/service.js';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, http, startCentral } from './helpers.js';

// Kinds of fact only this file knows, declared by a module of its own, so the central's behaviour is
// observed through a table the applier writes (the money kinds are declared by their own modules).
const testModule: PosdModule = {
  name: 'test-notes',
  sync: {
    push: {
      test_note: {
        apply(ctx, record) {
          if (record.payload.refuse) return 'refused on purpose';
          ctx.db.exec('CREATE TABLE IF NOT EXISTS test_notes (id TEXT PRIMARY KEY, account_id TEXT, amount INTEGER)');
          ctx.db.prepare('INSERT INTO test_notes (id, account_id, amount) VALUES (?, ?, ?)').run(record.id, record.account_id, record.payload.amount_in_cents);
        },
      },
      test_broken: {
        apply(ctx) {
          tx(ctx.db, () => ctx.db.exec('CREATE TABLE IF NOT EXISTS test_broken (x)'));
          throw new Error('disk on fire');
        },
      },
      test_busy: {
        apply(ctx, record) {
          if (busy) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
          ctx.db.prepare('INSERT INTO test_notes (id, account_id, amount) VALUES (?, ?, ?)').run(record.id, record.account_id, 0);
        },
      },
    },
  },
};

/** While true, the `test_busy` applier fails as a locked database does. */
let busy = true;
let central: TestServer;
let store: ReturnType<typeof addStoreAccount>;
let other: ReturnType<typeof addStoreAccount>;

beforeAll(async () => {
  central = await startCentral({ modules: [...MODULES, testModule] });
  store = addStoreAccount(central, 'Store A');
  other = addStoreAccount(central, 'Store B');
});
afterAll(async () => central?.stop());

/** Records made at the store just now (the central refuses times before the store's account existed). */
const RECENT = new Date().toISOString();
let n = 0;
function rec(seq: number, prev: number, over: Record<string, unknown> = {}) {
  return {
    seq,
    prev_seq: prev,
    id: `sync_t${++n}`,
    kind: 'test_note',
    account_id: store.accountId,
    live_mode: true,
    payload: { amount_in_cents: 100 * seq, currency: 'GTQ' },
    created_at: RECENT,
    ...over,
  };
}
const push = (storeId: string, records: unknown[], key = store.key) =>
  http('POST', `${central.url}/sync/push`, key, { protocol: 1, store_id: storeId, records });
const notes = () =>
  (central.daemon.ctx.db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'test_notes'").get() as { n: number }).n
    ? (central.daemon.ctx.db.prepare('SELECT count(*) AS n FROM test_notes').get() as { n: number }).n
    : 0;
/** The push answered on receipt; this waits for the central's projector to apply what it received. */
const settled = () => projected(central.daemon.ctx);
const outcomeOf = (id: string) => (central.daemon.ctx.db.prepare('SELECT outcome FROM sync_received WHERE id = ?').get(id) as { outcome: string }).outcome;
const received = () => (central.daemon.ctx.db.prepare('SELECT count(*) AS n FROM sync_received').get() as { n: number }).n;

describe('POST /sync/push at the central', () => {
  it('receives a batch once and answers the highest received seq; the same push repeated (lost response) creates nothing twice', async () => {
    const n0 = notes();
    const batch = [rec(1, 0), rec(2, 1), rec(3, 2)];
    const first = await push('store_a1', batch);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ applied_seq: 3, applied: 3, duplicates: 0, rejected: [] });
    await settled();
    const before = notes();
    expect(before).toBe(n0 + 3);
    const again = await push('store_a1', batch);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ applied_seq: 3, applied: 0, duplicates: 3 });
    await settled();
    expect(notes()).toBe(before);
    // Overlapping batch: the known part is recognised, the new part received and applied.
    const next = await push('store_a1', [batch[2], rec(4, 3)]);
    expect(next.body).toMatchObject({ applied_seq: 4, applied: 1, duplicates: 1 });
    await settled();
    expect(notes()).toBe(before + 1);
    expect(batch.map((r) => outcomeOf(r.id))).toEqual(['applied', 'applied', 'applied']);
  });

  it('applies a push of 250 records after its answer, moving applied_seq to the received seq', async () => {
    const n0 = notes();
    const many = [];
    for (let seq = 1; seq <= 250; seq++) many.push(rec(seq, seq - 1));
    const res = await push('store_slices', many);
    expect(res.body).toMatchObject({ applied_seq: 250, applied: 250 });
    const row = () =>
      central.daemon.ctx.db.prepare("SELECT received_seq, applied_seq FROM sync_stores WHERE store_id = 'store_slices'").get() as {
        received_seq: number;
        applied_seq: number;
      };
    // The answer left before the first slice ran (it runs on a later turn of the event loop).
    expect(row().received_seq).toBe(250);
    await settled();
    expect(row()).toEqual({ received_seq: 250, applied_seq: 250 });
    expect(notes()).toBe(n0 + 250);
    const listed = (await http('GET', `${central.url}/sync/stores`, store.key)).body.find((s: any) => s.store_id === 'store_slices');
    expect(listed).toMatchObject({ received_seq: 250, applied_seq: 250 });
  });

  it('refuses a wrong, revoked or organization key and applies nothing', async () => {
    const r0 = received();
    const bad = await push('store_k', [rec(1, 0)], `sk_live_${'x'.repeat(32)}`);
    expect(bad.status).toBe(401);
    expect(bad.body.code).toBe('invalid_key');
    const none = await http('POST', `${central.url}/sync/push`, null, { protocol: 1, store_id: 'store_k', records: [rec(1, 0)] });
    expect(none.status).toBe(401);
    const accounts = new AccountsService(central.daemon.ctx.db, central.daemon.ctx.clock);
    const org = accounts.createKey({ organizationId: central.installation.organization_id, environment: 'live' });
    const orgPush = await push('store_k', [rec(1, 0)], org.key);
    expect(orgPush.status).toBe(403);
    const extra = accounts.createKey({ accountId: store.accountId, environment: 'live' });
    accounts.revokeKey(extra.prefix);
    const revoked = await push('store_k', [rec(1, 0)], extra.key);
    expect(revoked.body.code).toBe('revoked_key');
    expect(received()).toBe(r0);
  });

  it("refuses a batch holding another account's record, even beside valid ones", async () => {
    const r0 = received();
    const res = await push('store_a2', [rec(1, 0), rec(2, 1, { account_id: other.accountId })]);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'sync_account_forbidden', record_id: expect.any(String) });
    // The sandbox record with live_mode true is another account as well.
    const wrongMode = await push('store_a2', [rec(1, 0, { account_id: store.sandboxId })]);
    expect(wrongMode.body.code).toBe('sync_account_forbidden');
    expect(received()).toBe(r0);
    // Its own sandbox, in sandbox mode, is in scope.
    const ok = await push('store_a2', [rec(1, 0, { account_id: store.sandboxId, live_mode: false })]);
    expect(ok.status).toBe(200);
  });

  it('refuses a sequence gap and applies nothing of the batch', async () => {
    await push('store_a3', [rec(1, 0)]);
    const r0 = received();
    const res = await push('store_a3', [rec(3, 2), rec(4, 3)]);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'sync_sequence_gap', applied_seq: 1 });
    // A gap in the middle of a batch rolls back its first records too.
    const mid = await push('store_a3', [rec(2, 1), rec(4, 3)]);
    expect(mid.body).toMatchObject({ code: 'sync_sequence_gap', applied_seq: 1 });
    // Seq 2 was rolled back with the batch: the message must not say the central applied it.
    expect(mid.body.message).toContain('the record before it in the batch is seq 2; nothing was received (the central has received up to seq 1)');
    expect(received()).toBe(r0);
  });

  it('refuses a tampered record that was already applied (same id, different content)', async () => {
    const original = rec(1, 0);
    await push('store_a4', [original]);
    const r0 = received();
    const tampered = await push('store_a4', [{ ...original, payload: { amount_in_cents: 1, currency: 'GTQ' } }, rec(2, 1)]);
    expect(tampered.status).toBe(409);
    expect(tampered.body).toMatchObject({ code: 'sync_record_conflict', record_id: original.id });
    // The same id pushed again by another store box of the account, at a new position.
    const replay = await push('store_a5', [{ ...original, seq: 1, prev_seq: 0 }]);
    expect(replay.body.code).toBe('sync_record_conflict');
    expect(received()).toBe(r0);
  });

  it('refuses a store id bound to another account', async () => {
    await push('store_a6', [rec(1, 0)]);
    const res = await push('store_a6', [rec(2, 1, { account_id: other.accountId })], other.key);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('sync_store_mismatch');
  });

  it('answers 400 with the error body for malformed pushes and applies nothing', async () => {
    const r0 = received();
    for (const body of [
      '{"protocol":1,',
      { protocol: 2, store_id: 's', records: [] },
      { protocol: 1, store_id: 's', records: [{ ...rec(1, 0), seq: '1' }] },
      { protocol: 1, store_id: 's', records: [{ ...rec(1, 0), payload: 'x' }] },
      { protocol: 1, store_id: 'bad id!', records: [] },
      { protocol: 1, store_id: 's', records: [rec(2, 1), rec(1, 0)] },
    ]) {
      const res = await http('POST', `${central.url}/sync/push`, store.key, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toMatch(/^(validation_error|invalid_json)$/);
    }
    expect(received()).toBe(r0);
  });

  it('holds a record of a kind it has no applier for, goes on with the stream, and applies it in order once one exists', async () => {
    const res = await push('store_a7', [rec(1, 0, { kind: 'later_kind' }), rec(2, 1)]);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ applied_seq: 2, held: 0 });
    await settled();
    const outcome = () => (central.daemon.ctx.db.prepare("SELECT outcome FROM sync_received WHERE kind = 'later_kind'").get() as { outcome: string }).outcome;
    expect(outcome()).toBe('held');
    expect(applyHeldRecords(central.daemon.ctx)).toBe(0);
    // A central upgraded to a version whose modules declare the kind: its registry knows it.
    const applied: string[] = [];
    const later: PosdModule = { name: 'later', sync: { push: { later_kind: { apply: (_ctx, r) => void applied.push(r.id) } } } };
    const upgraded = { ...central.daemon.ctx, registry: buildRegistry([...MODULES, testModule, later]) };
    expect(applyHeldRecords(upgraded)).toBe(1);
    expect(outcome()).toBe('applied');
    expect(applied).toHaveLength(1);
    expect(applyHeldRecords(upgraded)).toBe(0);
  });

  it('keeps a record the central refuses on its merits, goes on, and tells the store through its feed', async () => {
    const refused = rec(1, 0, { payload: { refuse: true } });
    const res = await push('store_a8', [refused, rec(2, 1)]);
    expect(res.status).toBe(200);
    expect(res.body.applied_seq).toBe(2);
    // Decided by the projector, after the answer: the refusal travels in the feed.
    expect(res.body.rejected).toEqual([]);
    await settled();
    expect(outcomeOf(refused.id)).toBe('rejected');
    const feed = await http('GET', `${central.url}/sync/feed?after=0`, store.key);
    const refusal = feed.body.changes.find((c: any) => c.kind === 'record_rejected' && c.payload.record_id === refused.id);
    expect(refusal.payload).toMatchObject({ reason: 'refused on purpose', store_id: 'store_a8' });
    // The refusal is news for the box that pushed the record, not for another box of the account.
    const mine = await http('GET', `${central.url}/sync/feed?after=0&store_id=store_a8`, store.key);
    expect(mine.body.changes.filter((c: any) => c.kind === 'record_rejected').map((c: any) => c.payload.record_id)).toContain(refused.id);
    const other = await http('GET', `${central.url}/sync/feed?after=0&store_id=store_other`, store.key);
    expect(other.body.changes.filter((c: any) => c.kind === 'record_rejected')).toEqual([]);
  });

  it('re-emits a store event with its own id, once however often it is pushed', async () => {
    const event = { id: 'msg_fromstore0000001', type: 'cash_sale.created', object_id: 'cs_1', payload: { id: 'cs_1' }, created_at: RECENT };
    const r = rec(1, 0, { kind: 'event', id: `sync_${event.id}`, payload: event });
    await push('store_a9', [r]);
    await settled();
    await push('store_a9', [r]);
    await settled();
    const rows = central.daemon.ctx.db.prepare('SELECT id, account_id, type FROM events WHERE id = ?').all(event.id);
    expect(rows).toEqual([{ id: event.id, account_id: store.accountId, type: 'cash_sale.created' }]);
  });

  it('lists the stores that push, how far and how recently, to the keys that cover them', async () => {
    await push('store_list1', [rec(1, 0), rec(2, 1, { kind: 'never_known' })]);
    await settled();
    const mine = await http('GET', `${central.url}/sync/stores`, store.key);
    expect(mine.status).toBe(200);
    expect(mine.body.find((s: any) => s.store_id === 'store_list1')).toMatchObject({
      account_id: store.accountId,
      received_seq: 2,
      applied_seq: 2,
      held_records: 1,
      rejected_records: 0,
    });
    const theirs = await http('GET', `${central.url}/sync/stores`, other.key);
    expect(theirs.body.filter((s: any) => s.account_id === store.accountId)).toEqual([]);
    const accounts = new AccountsService(central.daemon.ctx.db, central.daemon.ctx.clock);
    const org = accounts.createKey({ organizationId: central.installation.organization_id, environment: 'live' });
    const all = await http('GET', `${central.url}/sync/stores`, org.key);
    expect(all.body.map((s: any) => s.store_id)).toContain('store_list1');
    expect((await http('GET', `${central.url}/sync/stores`, null)).status).toBe(401);
  });

  it("keeps what a box says it still holds after each push, for the central's stores panel", async () => {
    const listed = async () => (await http('GET', `${central.url}/sync/stores`, store.key)).body.find((s: any) => s.store_id === 'store_backlog');
    await push('store_backlog', [rec(1, 0)]);
    expect(await listed()).toMatchObject({ box_waiting: null, box_waiting_since: null });
    const said = await http('POST', `${central.url}/sync/push`, store.key, {
      protocol: 1,
      store_id: 'store_backlog',
      records: [rec(2, 1)],
      waiting: 1200,
      waiting_since: '2026-03-01T08:00:00.000Z',
    });
    expect(said.status).toBe(200);
    expect(await listed()).toMatchObject({ received_seq: 2, box_waiting: 1200, box_waiting_since: '2026-03-01T08:00:00.000Z' });
    const bad = await http('POST', `${central.url}/sync/push`, store.key, { protocol: 1, store_id: 'store_backlog', records: [rec(3, 2)], waiting: -1 });
    expect(bad.status).toBe(400);
    expect(await listed()).toMatchObject({ received_seq: 2, box_waiting: 1200 });
  });

  it("parks a record whose applier fails, undoing what it wrote, and applies the store's later records", async () => {
    const r0 = received();
    const n0 = notes();
    const res = await push('store_a10', [rec(1, 0), rec(2, 1, { kind: 'test_broken' }), rec(3, 2)]);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ applied_seq: 3, parked: 0, rejected: [] });
    await settled();
    expect(received()).toBe(r0 + 3);
    expect(notes()).toBe(n0 + 2);
    // The applier's savepoint was rolled back: its table was never made.
    expect(central.daemon.ctx.db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'test_broken'").get()).toEqual({ n: 0 });
    const parked = central.daemon.ctx.db
      .prepare("SELECT outcome, reason, decided_at FROM sync_received WHERE store_id = 'store_a10' AND seq = 2")
      .get() as Record<string, string>;
    expect(parked).toMatchObject({ outcome: 'parked', reason: 'applier failed: disk on fire' });
    expect(parked.decided_at).toMatch(/^\d{4}-/);
    expect((await http('GET', `${central.url}/sync/stores`, store.key)).body.find((s: any) => s.store_id === 'store_a10')).toMatchObject({ applied_seq: 3 });
  });

  it('rolls a slice back whole when the database itself fails (busy), and applies it on a later pass', async () => {
    const n0 = notes();
    const first = rec(1, 0);
    const res = await push('store_a11', [first, rec(2, 1, { kind: 'test_busy' })]);
    // Received: the box is done with them; applying them is the central's affair.
    expect(res.status).toBe(200);
    expect(res.body.applied_seq).toBe(2);
    await settled();
    const row = () => central.daemon.ctx.db.prepare("SELECT received_seq, applied_seq FROM sync_stores WHERE store_id = 'store_a11'").get();
    expect(row()).toEqual({ received_seq: 2, applied_seq: 0 });
    expect(outcomeOf(first.id)).toBe('received');
    expect(notes()).toBe(n0);
    busy = false;
    await settled();
    expect(row()).toEqual({ received_seq: 2, applied_seq: 2 });
    expect(outcomeOf(first.id)).toBe('applied');
    expect(notes()).toBe(n0 + 2);
  });
});
