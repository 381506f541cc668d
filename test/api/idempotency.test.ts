import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { MODULES_WITH_FIXTURE } from '../helpers/fixture-module.js';
import { IdempotencyStore } from '../../src/api/idempotency.js';
import { openDatabase } from '../../src/db/database.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { join } from 'node:path';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ modules: MODULES_WITH_FIXTURE });
});
afterAll(() => s.stop());

const count = async () => (await s.api('GET', '/fixture_notes/count')).body.count as number;
const note = (key: string, body: Record<string, unknown>, extra: { key?: string } = {}) =>
  s.api('POST', '/fixture_notes', { body, headers: { 'idempotency-key': key }, ...extra });

describe('Idempotency-Key (gaps.md)', () => {
  it('replays the first response for the same key and request, writing once', async () => {
    const before = await count();
    const first = await note('k-replay', { text: 'a', amount_in_cents: 100 });
    const second = await note('k-replay', { text: 'a', amount_in_cents: 100 });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(await count()).toBe(before + 1);
  });

  it('answers 422 idempotency_key_reused for a different body or path under the same key', async () => {
    await note('k-mismatch', { text: 'a', amount_in_cents: 100 });
    const other = await note('k-mismatch', { text: 'a', amount_in_cents: 101 });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_reused');
  });

  it('answers 409 idempotency_key_in_use while the first request runs, and the first still lands once', async () => {
    const before = await count();
    const slow = note('k-concurrent', { text: 'slow', amount_in_cents: 5, delay_ms: 300 });
    // The first request has claimed the key once its handler is running; wait for that, not for time.
    let second;
    for (;;) {
      second = await note('k-concurrent', { text: 'slow', amount_in_cents: 5, delay_ms: 300 });
      if (second.status !== 201) break;
    }
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('idempotency_key_in_use');
    expect((await slow).status).toBe(201);
    const replay = await note('k-concurrent', { text: 'slow', amount_in_cents: 5, delay_ms: 300 });
    expect(replay.status).toBe(201);
    expect(await count()).toBe(before + 1);
  });

  it('many identical requests sent at once write exactly one row', async () => {
    const before = await count();
    const results = await Promise.all(Array.from({ length: 20 }, () => note('k-burst', { text: 'burst', amount_in_cents: 7, delay_ms: 50 })));
    const statuses = results.map((r) => r.status);
    expect(statuses.every((st) => st === 201 || st === 409)).toBe(true);
    expect(await count()).toBe(before + 1);
  });

  it('keys are scoped to the account: another account may use the same key', async () => {
    const before = await count();
    await note('k-scoped', { text: 'a', amount_in_cents: 1 });
    const live = await note('k-scoped', { text: 'a', amount_in_cents: 1 }, { key: s.installation.keys.live });
    expect(live.status).toBe(201);
    expect(live.headers['idempotent-replayed']).toBeUndefined();
    expect(await count()).toBe(before + 2);
  });

  it('a validation error stores nothing: the corrected request under the same key goes through', async () => {
    const bad = await note('k-fix', { text: 'a' });
    expect(bad.status).toBe(400);
    const good = await note('k-fix', { text: 'a', amount_in_cents: 3 });
    expect(good.status).toBe(201);
  });

  it('a refusal the handler makes after the key is claimed is not stored either: the corrected retry under the same key goes through (issue 15)', async () => {
    const headers = { 'idempotency-key': 'k-cash-fix' };
    const refused = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 1000, currency: 'EUR' }, headers });
    expect(refused.status).toBe(400);
    const again = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 1000, currency: 'EUR' }, headers });
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    const corrected = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 1000 }, headers });
    expect(corrected.status).toBe(201);
    const replay = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 1000 }, headers });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.id).toBe(corrected.body.id);
  });

  it('an answer stored inside the write transaction survives a failure between commit and reply', async () => {
    const before = await count();
    const body = { text: 'committed', amount_in_cents: 9, fail_after_commit: true };
    const failed = await note('k-after-commit', body);
    expect(failed.status).toBe(500);
    const retry = await note('k-after-commit', body);
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toMatchObject({ text: 'committed', amount_in_cents: 9 });
    expect(await count()).toBe(before + 1);
  });

  it('rejects keys over 255 characters', async () => {
    const r = await note('x'.repeat(256), { text: 'a', amount_in_cents: 3 });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('idempotency_key_invalid');
  });
});

describe('IdempotencyStore across restarts', () => {
  it('a key left running by a dead process can be claimed again; one held by this process cannot', () => {
    const db = openDatabase(join(s.dataDir, 'idem-restart.db'));
    const clock = new ManualClock();
    const before = new IdempotencyStore(db, clock, 'boot-1');
    expect(before.begin('acct', 'k', 'fp')).toBeNull();
    expect(() => before.begin('acct', 'k', 'fp')).toThrow(/still running/);
    const after = new IdempotencyStore(db, clock, 'boot-2');
    expect(after.begin('acct', 'k', 'fp')).toBeNull();
    after.finish('acct', 'k', 201, '{"ok":true}', 'application/json');
    expect(after.begin('acct', 'k', 'fp')).toMatchObject({ state: 'done', status_code: 201 });
    clock.advance(9 * 24 * 3_600_000);
    expect(after.prune(192)).toBe(1);
    db.close();
  });
});
