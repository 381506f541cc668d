import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type SyncFile, walFlusherOf } from '../../src/db/wal-flush.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { fund } from '../transfers/money-helpers.js';
import { rows } from '../money/helpers.js';

// A write request waits for one flush of the WAL, with or without an Idempotency-Key: a request
// that waits for two in a row (the key's claim flushed before the work, then the work's commit)
// can reach at most half the rate on a slow disk (issue 38, decision 0287). Counted on the daemon's
// own flusher with a disk that counts its flushes (and, in the last test, holds them).
let s: TestServer;
let flushes = 0;
let held: Array<(error: Error | null) => void> | null = null;
let bank: string;

beforeAll(async () => {
  s = await startTestServer();
  fund(s.daemon.ctx, s.installation.sandbox_id, 10_000_000);
  const flusher = walFlusherOf(s.daemon.ctx.db) as unknown as { sync: SyncFile };
  const disk = flusher.sync;
  flusher.sync = (file, done) => {
    flushes++;
    if (held) held.push(done);
    else disk(file, done);
  };
  bank = (
    await s.api('POST', '/bank_accounts', {
      body: { holder_name: 'Tienda', number: '0123456789', bank_name: 'Banrural', currency: 'GTQ', account_type: 'monetaria' },
    })
  ).body.id;
});
afterEach(() => {
  const waiting = held ?? [];
  held = null;
  while (waiting.length) waiting.shift()!(null);
});
afterAll(() => s.stop());

const checkoutBody = { items: [{ name: 'Coffee', amount_in_cents: 1500, quantity: 2 }], currency: 'GTQ' };
const scenarios: Record<string, (i: number) => [string, unknown]> = {
  checkouts: () => ['/checkouts', checkoutBody],
  customers: (i) => ['/customers', { email: `c${i}@example.com` }],
  products: (i) => ['/products', { product: { name: `Item ${i}`, prices_attributes: [{ amount_in_cents: 1000, currency: 'GTQ' }] } }],
  withdrawals: () => ['/withdrawals', { amount_in_cents: 1, currency: 'GTQ', bank_account_id: bank }],
};
let n = 0;

/** Flushes per request over `count` requests sent one after the other. */
async function flushesPerRequest(next: (i: number) => [string, unknown], count: number, key?: string): Promise<number> {
  const before = flushes;
  for (let i = 0; i < count; i++) {
    const [path, body] = next(n++);
    const r = await s.api('POST', path, { body, headers: key ? { 'idempotency-key': `${key}-${n}` } : {} });
    expect(r.status, r.text).toBeLessThan(300);
  }
  return (flushes - before) / count;
}

describe('flushes a write request waits for, sent one at a time', () => {
  for (const [name, next] of Object.entries(scenarios)) {
    it(`${name}: one, without and with an Idempotency-Key`, async () => {
      expect(await flushesPerRequest(next, 5)).toBe(1);
      expect(await flushesPerRequest(next, 5, name)).toBe(1);
    });
  }

  it('a replay of a stored answer waits for one flush, a reused key for none', async () => {
    const [path, body] = scenarios.checkouts(0);
    const headers = { 'idempotency-key': 'replayed' };
    const first = await s.api('POST', path, { body, headers });
    const before = flushes;
    const replay = await s.api('POST', path, { body, headers });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.id).toBe(first.body.id);
    const reused = await s.api('POST', path, { body: { ...checkoutBody, currency: 'USD' }, headers });
    expect(reused.status).toBe(422);
    expect(flushes - before).toBe(1);
  });
});

it("flushes a key's claim with the write, and answers only once that flush ended", async () => {
  held = [];
  const flushesBefore = flushes;
  const before = rows(s, 'SELECT count(*) AS n FROM checkouts')[0].n as number;
  let answered = false;
  const post = s.api('POST', '/checkouts', { body: checkoutBody, headers: { 'idempotency-key': 'claim-with-write' } }).then((r) => {
    answered = true;
    return r;
  });
  await until("the write's batch committed and its flush started", () => held!.length === 1);
  // No flush ran for the claim alone: this one covers the claim and the checkout, whose commit
  // stored the key's answer.
  expect(rows(s, 'SELECT count(*) AS n FROM checkouts')[0].n).toBe(before + 1);
  expect(rows(s, "SELECT state FROM idempotency_keys WHERE key = 'claim-with-write'")).toEqual([{ state: 'done' }]);
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
  expect(answered).toBe(false);
  held!.shift()!(null);
  const r = await post;
  expect(r.status).toBe(201);
  expect(held).toEqual([]);
  expect(flushes - flushesBefore).toBe(1);
});

it('replays a stored answer only after a flush that started after the replay read it', async () => {
  const headers = { 'idempotency-key': 'replay-after-flush' };
  const first = await s.api('POST', '/checkouts', { body: checkoutBody, headers });
  expect(first.status).toBe(201);
  held = [];
  let answered = false;
  const replay = s.api('POST', '/checkouts', { body: checkoutBody, headers }).then((r) => {
    answered = true;
    return r;
  });
  await until('the replay waits for a flush', () => held!.length === 1);
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
  expect(answered).toBe(false);
  held!.shift()!(null);
  const r = await replay;
  expect(r.headers['idempotent-replayed']).toBe('true');
  expect(r.body.id).toBe(first.body.id);
});

describe('writers at once on a slow disk (decisions 0298, 0306)', () => {
  const tables: Record<string, string> = { customers: 'customers', products: 'products', checkouts: 'checkouts' };
  for (const [name, laterFirst] of Object.keys(tables).flatMap((n) => [[n, true] as const, [n, false] as const])) {
    const title = laterFirst
      ? 'the later flush ends first and answers every write, having started after all of them committed'
      : 'the earlier flush ends first and answers only the writes it covered';
    it(`${name}: flushes run side by side, no write is answered before a flush that started after it ended; ${title}`, async () => {
      const flusher = walFlusherOf(s.daemon.ctx.db) as unknown as { now: () => number };
      const clock = flusher.now;
      // The flusher's clock moves only when the test says.
      let t = 0;
      flusher.now = () => t;
      const count = () => rows(s, `SELECT count(*) AS n FROM ${tables[name]}`)[0].n as number;
      try {
        held = [];
        const send = () => {
          const [path, body] = scenarios[name](n++);
          return s.api('POST', path, { body });
        };
        // One flush of 10 ms first: from then on the disk is known slow.
        const flushesBefore = flushes + 1;
        const first = send();
        await until('the first flush started', () => held!.length === 1);
        t += 10;
        held!.shift()!(null);
        expect((await first).status).toBeLessThan(300);
        const before = count();
        const answered: string[] = [];
        const wave = (label: string) =>
          Array.from({ length: 10 }, () =>
            send().then((r) => {
              answered.push(label);
              return r;
            }),
          );
        // Ten writers: the first batch's flush starts at once; the clock standing still, the rest
        // wait for the spacing (the last flush over the flushes allowed at once). Ten more commit
        // meanwhile.
        const early = wave('early');
        await until('the early writers committed', () => count() === before + 10);
        const late = wave('late');
        await until('the late writers committed', () => count() === before + 20);
        expect(held).toHaveLength(1);
        // A whole flush later the spacing has passed: the next flush starts beside the running one.
        t += 10;
        await until('a second flush started beside the first', () => held!.length === 2);
        for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
        expect(answered).toEqual([]);
        expect(flushes - flushesBefore).toBe(2);
        const settle = async () => {
          for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
        };
        if (laterFirst) {
          // The later flush started once all 20 had committed: ending well, it answers them all,
          // the earlier one still held.
          held!.pop()!(null);
          for (const r of await Promise.all([...early, ...late])) expect(r.status, r.text).toBeLessThan(300);
          expect(answered).toHaveLength(20);
          held!.shift()!(null);
        } else {
          // The earlier flush started before any late writer committed: its own writers (early
          // ones) are answered, no late writer is.
          held!.shift()!(null);
          await until('the writers of the earlier flush answered', () => answered.length > 0);
          await settle();
          expect(answered.filter((a) => a === 'late')).toEqual([]);
          held!.shift()!(null);
          for (const r of await Promise.all([...early, ...late])) expect(r.status, r.text).toBeLessThan(300);
          expect(answered).toHaveLength(20);
        }
      } finally {
        flusher.now = clock;
      }
    });
  }
});
