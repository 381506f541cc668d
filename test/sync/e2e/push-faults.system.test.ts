import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { ChaosProxy } from './chaos-proxy.js';
import { wireRecord, type OutboxRow } from '../wire-records.js';
import { until } from '../helpers.js';
import { killStarted, posd, removeTempDirs, requireBuild, startDaemonProcess, tempDir, type DaemonProcess } from './processes.js';

/**
 * The push protocol's faults with the central as its own `posd serve` process: a push whose answer
 * is cut on its way back (the central applied it, the store never heard) and is pushed again by a
 * real store process; then forged and malformed pushes the test sends itself. Each refusal is
 * checked by its error body and by the central's tables, read from its SQLite file read-only.
 */
const SALES = 20;

let central: DaemonProcess;
let store: DaemonProcess;
let proxy: ChaosProxy;
let centralDb: Database.Database;
let storeDb: Database.Database;
let accountId: string;
let storeKey: string;
let otherAccountId: string;
let otherKey: string;
let storeId: string;

interface Reply {
  status: number;
  body: any;
}

async function call(method: 'GET' | 'POST', url: string, key: string | null, body?: unknown): Promise<Reply> {
  const res = await request(url, {
    method,
    headers: { ...(key ? { 'x-secret-key': key } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    headersTimeout: 5000,
    bodyTimeout: 5000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

/** A push sent by the test straight to the central (not through the store's proxy). */
const push = (body: unknown, key: string | null = storeKey) => call('POST', `${central.url}/sync/push`, key, body);

/** The store's outbox rows after `seq` as the store pushes them (docs/sync-protocol.md), chained from `seq`. */
function recordsAfter(seq: number) {
  const rows = storeDb
    .prepare('SELECT seq, id, kind, account_id, live_mode, payload, created_at FROM sync_outbox WHERE seq > ? ORDER BY seq')
    .all(seq) as OutboxRow[];
  return rows.map((r, i) => ({ seq: r.seq, prev_seq: i ? rows[i - 1].seq : seq, ...wireRecord(r) }));
}
type PushRecord = ReturnType<typeof recordsAfter>[number];

/** Every event the store made has been copied into its outbox (the push loop does it, link up or down). */
const eventsTailed = () =>
  storeDb.prepare("SELECT (SELECT count(*) FROM events) AS made, (SELECT count(*) FROM sync_outbox WHERE kind = 'event') AS tailed").get() as {
    made: number;
    tailed: number;
  };

/** What a push could change at the central: the rows it applies into, and the store's cursor. */
function centralCounts() {
  const n = (sql: string, ...args: unknown[]) => (centralDb.prepare(sql).get(...args) as { n: number }).n;
  return {
    received: n('SELECT count(*) AS n FROM sync_received'),
    stores: n('SELECT count(*) AS n FROM sync_stores'),
    appliedSeq: n('SELECT coalesce(max(applied_seq), -1) AS n FROM sync_stores WHERE store_id = ?', storeId),
    intents: n('SELECT count(*) AS n FROM intents'),
    cashIntents: n('SELECT count(*) AS n FROM cash_intents'),
    checkouts: n('SELECT count(*) AS n FROM checkouts'),
    ledger: n('SELECT count(*) AS n FROM balance_transactions'),
    events: n('SELECT count(*) AS n FROM events'),
    feed: n('SELECT count(*) AS n FROM sync_feed'),
  };
}

async function storeStatus(): Promise<any> {
  return (await call('GET', `${store.url}/sync/status`, storeKey)).body;
}

async function sell(count: number, from: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const res = await call('POST', `${store.url}/api/cash_sales`, storeKey, { amount_in_cents: from + i, currency: 'GTQ' });
    expect(res.status).toBe(201);
  }
}

beforeAll(async () => {
  requireBuild();
  // Central operations: a central, two store accounts and their live keys, all through the CLI.
  const centralDir = tempDir('posd-central-');
  const inst = await posd(['init', '--role', 'central', '--name', 'Chain', '--json', '--data', centralDir]);
  accountId = (await posd(['accounts', 'create', '--name', 'Store 7', '--organization', inst.organization_id, '--json', '--data', centralDir])).account_id;
  storeKey = (await posd(['keys', 'create', '--account', accountId, '--env', 'live', '--json', '--data', centralDir])).key;
  otherAccountId = (await posd(['accounts', 'create', '--name', 'Store 8', '--organization', inst.organization_id, '--json', '--data', centralDir])).account_id;
  otherKey = (await posd(['keys', 'create', '--account', otherAccountId, '--env', 'live', '--json', '--data', centralDir])).key;
  const limits = { per_key_per_second: 100_000 };
  central = await startDaemonProcess(centralDir, { role: 'central', limits });
  centralDb = new Database(join(centralDir, 'posd.db'), { readonly: true });

  const u = new URL(central.url);
  proxy = new ChaosProxy({ host: u.hostname, port: Number(u.port) });
  proxy.watch('POST /sync/push');
  const proxyPort = await proxy.listen();

  const storeDir = tempDir('posd-store-');
  storeId = (await posd(['init', '--central-url', `http://127.0.0.1:${proxyPort}`, '--central-key', storeKey, '--json', '--data', storeDir])).store_id;
  expect(storeId).toMatch(/^store_/);
  store = await startDaemonProcess(storeDir, {
    role: 'store',
    limits,
    // One batch holds everything this file makes, so the repeated push is the very same batch.
    sync: { batch_size: 500, backoff_min_ms: 20, backoff_max_ms: 200, feed_wait_ms: 500, request_timeout_ms: 3000, reconcile_interval_ms: 0 },
  });
  storeDb = new Database(join(storeDir, 'posd.db'), { readonly: true });
}, 30_000);

afterAll(async () => {
  centralDb?.close();
  storeDb?.close();
  await store?.kill('SIGTERM');
  await central?.kill('SIGTERM');
  await killStarted();
  await proxy?.close();
  removeTempDirs();
});

describe('a push whose answer is lost, with store and central as separate processes', () => {
  it('is pushed again by the store and the central holds every record and object once', async () => {
    // The link is down while the store sells, so its first push after the link returns holds everything.
    proxy.mode = { up: false, cutResponse: 0, delayMs: 0 };
    proxy.cutAll();
    await sell(SALES, 1000);
    await until('the events copied into the outbox', () => {
      const e = eventsTailed();
      return e.made >= SALES && e.made === e.tailed;
    });
    const outbox = storeDb.prepare('SELECT seq, id FROM sync_outbox ORDER BY seq').all() as Array<{ seq: number; id: string }>;
    const last = outbox[outbox.length - 1].seq;
    expect(centralCounts()).toMatchObject({ received: 0, cashIntents: 0 });

    // The central's answer to the next push is cut after its headers and 10 bytes of body.
    const cut = proxy.cutNextResponse('POST /sync/push', 10);
    proxy.mode = { up: true, cutResponse: 0, delayMs: 0 };
    const lost = await cut;
    // The central had applied the batch and said so; the store got a status line and a broken body.
    expect(lost.status).toBe(200);
    expect(lost.body).toHaveLength(10);
    expect(() => JSON.parse(lost.body)).toThrow();

    await until('the store has nothing waiting', async () => {
      const s = await storeStatus();
      return s.records_waiting === 0 && s.acked_seq === last;
    });
    const status = await storeStatus();
    expect(status).toMatchObject({ connected: true, records_waiting: 0, oldest_waiting_at: null, acked_seq: last, rejected_records: 0 });

    // Two pushes crossed the link: the cut one, and the same batch again, all of it duplicates.
    expect(proxy.seen.map((s) => ({ status: s.status, cut: s.cut }))).toEqual([
      { status: 200, cut: true },
      { status: 200, cut: false },
    ]);
    expect(JSON.parse(proxy.seen[1].body)).toMatchObject({ applied_seq: last, applied: 0, duplicates: outbox.length, held: 0, rejected: [] });

    // The central holds each record once, in the store's sequence...
    expect(centralDb.prepare('SELECT seq, id FROM sync_received WHERE store_id = ? ORDER BY seq').all(storeId)).toEqual(outbox);
    expect(centralDb.prepare('SELECT applied_seq FROM sync_stores WHERE store_id = ?').get(storeId)).toEqual({ applied_seq: last });
    // ...and each object once, under the store's ids.
    const salesQ =
      'SELECT c.id, c.intent_id, c.checkout_id, c.amount_in_cents, i.status FROM cash_intents c JOIN intents i ON i.id = c.intent_id ORDER BY c.id';
    const storeSales = storeDb.prepare(salesQ).all() as Array<{ amount_in_cents: number }>;
    expect(storeSales.map((s) => s.amount_in_cents).sort((a, b) => a - b)).toEqual(Array.from({ length: SALES }, (_, i) => 1000 + i));
    expect(centralDb.prepare(salesQ).all()).toEqual(storeSales);
    const intentsQ = 'SELECT id, type, status, amount_in_cents, currency, checkout_id, created_at FROM intents ORDER BY id';
    expect(centralDb.prepare(intentsQ).all()).toEqual(storeDb.prepare(intentsQ).all());
    expect(centralDb.prepare('SELECT id FROM checkouts ORDER BY id').all()).toEqual(storeDb.prepare('SELECT id FROM checkouts ORDER BY id').all());
    // The store's events were re-emitted once each, with their ids.
    const storeEvents = storeDb.prepare('SELECT id, type FROM events ORDER BY id').all();
    const ids = (storeEvents as Array<{ id: string }>).map((e) => e.id);
    expect(centralDb.prepare(`SELECT id, type FROM events WHERE id IN (${ids.map(() => '?').join(',')}) ORDER BY id`).all(...ids)).toEqual(storeEvents);
  });
});

describe('forged and malformed pushes to a central process', () => {
  /** Records the store made while its link was down: valid, and not yet at the central. */
  let pending: PushRecord[];
  let appliedSeq: number;

  beforeAll(async () => {
    proxy.mode = { up: false, cutResponse: 0, delayMs: 0 };
    proxy.cutAll();
    appliedSeq = (centralDb.prepare('SELECT applied_seq FROM sync_stores WHERE store_id = ?').get(storeId) as { applied_seq: number }).applied_seq;
    await sell(1, 5000);
    await until('the new sale and its events in the outbox', () => {
      const e = eventsTailed();
      return e.made === e.tailed && recordsAfter(appliedSeq).length >= 2;
    });
    pending = recordsAfter(appliedSeq);
    expect(pending[0]).toMatchObject({ seq: appliedSeq + 1, prev_seq: appliedSeq, kind: 'cash_sale', account_id: accountId });
  });

  /** Sends a push, expects its refusal, and checks that the central's tables did not move. */
  async function refused(body: unknown, key: string | null = storeKey): Promise<Reply> {
    const before = centralCounts();
    const res = await push(body, key);
    expect(centralCounts()).toEqual(before);
    return res;
  }

  it('refuses a wrong or missing key with 401 and the error body', async () => {
    const batch = { protocol: 1, store_id: storeId, records: pending };
    const wrong = await refused(batch, `sk_live_${'x'.repeat(32)}`);
    expect(wrong).toEqual({ status: 401, body: { message: 'The secret key is not valid.', code: 'invalid_key' } });
    const none = await refused(batch, null);
    expect(none).toEqual({ status: 401, body: { message: 'Send your secret key in the X-SECRET-KEY header.', code: 'missing_key' } });
  });

  it("refuses another account's records, beside valid ones, and a store id bound to another account", async () => {
    const foreign = { ...pending[1], account_id: otherAccountId };
    const res = await refused({ protocol: 1, store_id: storeId, records: [pending[0], foreign] });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      code: 'sync_account_forbidden',
      record_id: foreign.id,
      message: `Record ${foreign.id} names account ${otherAccountId} (live), which this key does not act for; nothing was received.`,
    });
    // The other account's own key, with its own records, under this store's id.
    const theirs = await refused({ protocol: 1, store_id: storeId, records: [{ ...pending[0], account_id: otherAccountId }] }, otherKey);
    expect(theirs.status).toBe(403);
    expect(theirs.body).toEqual({ code: 'sync_store_mismatch', message: `Store ${storeId} pushes for another account; nothing was received.` });
  });

  it('refuses a sequence gap, at the start of a batch or in its middle', async () => {
    const [first, second] = pending;
    const skipped = { ...second, prev_seq: second.seq, seq: second.seq + 1 };
    const atStart = await refused({ protocol: 1, store_id: storeId, records: [skipped] });
    expect(atStart.status).toBe(409);
    expect(atStart.body).toEqual({
      code: 'sync_sequence_gap',
      applied_seq: appliedSeq,
      record_id: second.id,
      message: `Record ${second.id} (seq ${skipped.seq}) follows seq ${second.seq}, but the central has received up to seq ${appliedSeq}; nothing was received.`,
    });
    // The first record is valid and would apply alone; the gap after it rolls it back.
    const inMiddle = await refused({ protocol: 1, store_id: storeId, records: [first, skipped] });
    // The message names the record before it in the batch, not a seq the central never kept.
    expect(inMiddle).toEqual({
      status: 409,
      body: {
        code: 'sync_sequence_gap',
        applied_seq: appliedSeq,
        record_id: second.id,
        message: `Record ${second.id} (seq ${skipped.seq}) follows seq ${second.seq}, but the record before it in the batch is seq ${first.seq}; nothing was received (the central has received up to seq ${appliedSeq}).`,
      },
    });
  });

  it('refuses a tampered amount on a sale already applied, at its own seq or as a new record', async () => {
    const [applied] = recordsAfter(0).filter((r) => r.kind === 'cash_sale');
    const original = centralDb.prepare('SELECT hash, payload FROM sync_received WHERE id = ?').get(applied.id) as { hash: string; payload: string };
    type Sale = { sale: { amount_in_cents: number }; cash_intent: { id: string; amount_in_cents: number }; intent: { amount_in_cents: number } };
    const p = applied.payload as Sale;
    const amount = p.sale.amount_in_cents + 100_00;
    const forged = {
      ...applied,
      payload: {
        ...p,
        sale: { ...p.sale, amount_in_cents: amount },
        cash_intent: { ...p.cash_intent, amount_in_cents: amount },
        intent: { ...p.intent, amount_in_cents: amount },
      },
    };
    // The message says what the central holds (issue 32): that record with other content at its seq,
    // or that record at another seq.
    const conflict = (seq: number) => ({
      code: 'sync_record_conflict',
      record_id: applied.id,
      applied_seq: appliedSeq,
      message: `Record ${applied.id} (seq ${seq}) conflicts with what the central received: ${
        seq === applied.seq
          ? `the central holds record ${applied.id} (cash_sale) at seq ${seq} with other content`
          : `the central holds record ${applied.id} at seq ${applied.seq}`
      } (received up to seq ${appliedSeq}); nothing was received.`,
    });
    // Repeated at its own seq, in a batch that also carries the store's next, valid record (which
    // follows the central's applied seq, as after any duplicate).
    const atItsSeq = await refused({ protocol: 1, store_id: storeId, records: [forged, pending[0]] });
    expect(atItsSeq).toEqual({ status: 409, body: conflict(applied.seq) });
    // The same id slipped in as the next record.
    const asNew = await refused({ protocol: 1, store_id: storeId, records: [{ ...forged, seq: appliedSeq + 1, prev_seq: appliedSeq }] });
    expect(asNew).toEqual({ status: 409, body: conflict(appliedSeq + 1) });
    // The central kept what the store sent first.
    expect(centralDb.prepare('SELECT hash, payload FROM sync_received WHERE id = ?').get(applied.id)).toEqual(original);
    expect(centralDb.prepare('SELECT amount_in_cents FROM cash_intents WHERE id = ?').get(p.cash_intent.id)).toEqual({
      amount_in_cents: p.sale.amount_in_cents,
    });
  });

  it('answers 400 with the error body to a body that is not JSON or not a push', async () => {
    const notJson = { message: 'The request body is not a JSON object.', code: 'invalid_json' };
    expect(await refused('{"protocol":1,"store_id":')).toEqual({ status: 400, body: notJson });
    expect(await refused(JSON.stringify([{ protocol: 1 }]))).toEqual({ status: 400, body: notJson });
    const cases: Array<[string, unknown, string]> = [
      ['protocol 2', { protocol: 2, store_id: storeId, records: pending }, 'protocol'],
      ['a seq as a string', { protocol: 1, store_id: storeId, records: [{ ...pending[0], seq: String(pending[0].seq) }] }, 'records.0.seq'],
      ['a payload that is not an object', { protocol: 1, store_id: storeId, records: [{ ...pending[0], payload: 'x' }] }, 'records.0.payload'],
      ['no records', { protocol: 1, store_id: storeId }, 'records'],
      ['seqs going backwards', { protocol: 1, store_id: storeId, records: [pending[1], pending[0]] }, 'records.1.seq'],
      ['prev_seq not below seq', { protocol: 1, store_id: storeId, records: [{ ...pending[0], prev_seq: pending[0].seq }] }, 'records.0.prev_seq'],
    ];
    for (const [what, body, field] of cases) {
      const res = await refused(body);
      expect(res.status, what).toBe(400);
      expect(res.body, what).toMatchObject({ code: 'validation_error', message: expect.any(String), errors: { [field]: [expect.any(String)] } });
    }
  });

  it('still takes the store’s own records afterwards, once each, when its link returns', async () => {
    proxy.mode = { up: true, cutResponse: 0, delayMs: 0 };
    const last = pending[pending.length - 1].seq;
    await until('the store has nothing waiting', async () => {
      const s = await storeStatus();
      return s.records_waiting === 0 && s.acked_seq >= last;
    });
    const outbox = storeDb.prepare('SELECT seq, id FROM sync_outbox ORDER BY seq').all();
    expect(centralDb.prepare('SELECT seq, id FROM sync_received WHERE store_id = ? ORDER BY seq').all(storeId)).toEqual(outbox);
    // Received is acknowledged; applied follows on the central's projector, a moment later.
    await until(
      'the central applied what it received',
      () => (centralDb.prepare('SELECT applied_seq FROM sync_stores WHERE store_id = ?').get(storeId) as { applied_seq: number }).applied_seq >= last,
    );
    expect(centralDb.prepare('SELECT count(*) AS n, sum(amount_in_cents) AS sum FROM cash_intents').get()).toEqual({
      n: SALES + 1,
      sum: Array.from({ length: SALES }, (_, i) => 1000 + i).reduce((a, b) => a + b, 5000),
    });
  });
});
