import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { DueReader } from '../../src/modules/webhooks/due-reader.js';
import { webhooksStore } from '../../src/modules/webhooks/store.js';

// The dispatcher's reads of due rows go on from where the last one ended (decision 0296): the
// continuation must be exactly the due order a read from the beginning gives, across rows of the
// same time and endpoint (a fan-out batch) and past them, and start over when told to or when a
// read comes up short.
let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function setup() {
  dir = mkdtempSync(join(tmpdir(), 'posd-wh-due-'));
  const db = openDatabase(join(dir, 'posd.db'));
  const t = '2026-12-07T08:00:00.000Z';
  const ep = db.prepare(
    `INSERT INTO webhook_endpoints (id, account_id, live_mode, url, description, secret, disabled, from_seq, created_at, updated_at)
     VALUES (?, 'ac_1', 0, 'https://example.com/h', NULL, 'sealed', ?, 0, ?, ?)`,
  );
  for (const [id, disabled] of [
    ['we_a', 0],
    ['we_b', 0],
    ['we_off', 1],
  ] as const)
    ep.run(id, disabled, t, t);
  const row = db.prepare(
    `INSERT INTO webhook_deliveries (account_id, live_mode, endpoint_id, event_id, event_type, event_account_id, status, next_attempt_ms, created_at, updated_at)
     VALUES ('ac_1', 0, ?, ?, 'intent.succeeded', 'ac_1', ?, ?, ?, ?)`,
  );
  const add = (endpoint: string, ms: number, status = 'pending') => Number(row.run(endpoint, `msg_${ms}_${endpoint}`, status, ms, t, t).lastInsertRowid);
  // A batch of one time to two endpoints (interleaved, as a fan-out writes them), rows of other
  // times before and after, a disabled endpoint's, a settled one, and one not due yet.
  add('we_a', 20);
  for (let i = 0; i < 6; i++) {
    add('we_b', 10);
    add('we_a', 10);
    add('we_off', 10);
  }
  add('we_a', 10, 'succeeded');
  add('we_b', 5);
  add('we_b', 30);
  add('we_a', 99);
  return { db, store: webhooksStore(db) };
}

describe('reading due webhook deliveries on from the last read', () => {
  it('gives the due order of a read from the beginning, a few rows at a time', () => {
    const { store } = setup();
    const all = store.due(50, 100).map((r) => r.seq);
    // Ordered by time, then endpoint, then seq; the disabled endpoint's, the settled and the later rows left out.
    expect(store.due(50, 100).map((r) => [r.next_attempt_ms, r.endpoint_id])).toEqual([
      [5, 'we_b'],
      ...Array.from({ length: 6 }, () => [10, 'we_a']),
      ...Array.from({ length: 6 }, () => [10, 'we_b']),
      [20, 'we_a'],
      [30, 'we_b'],
    ]);
    for (const step of [1, 2, 4, 5]) {
      const reader = new DueReader(store);
      const got: number[] = [];
      for (let i = 0; i < 20 && got.length < all.length; i++) got.push(...reader.read(50, step, 0).map((r) => r.seq));
      expect(got).toEqual(all);
    }
  });

  it('reads past the skipped rows from the beginning only, and starts over when told or after a short read', () => {
    const { db, store } = setup();
    const all = store.due(50, 100).map((r) => r.seq);
    const reader = new DueReader(store);
    // From the beginning: the rows it will skip (in flight) counted into the limit.
    expect(reader.read(50, 2, 3).map((r) => r.seq)).toEqual(all.slice(0, 5));
    expect(reader.read(50, 2, 3).map((r) => r.seq)).toEqual(all.slice(5, 7));
    // A row made due before where the reads go on from is not seen until they start over.
    const early = Number(
      db
        .prepare(
          `INSERT INTO webhook_deliveries (account_id, live_mode, endpoint_id, event_id, event_type, event_account_id, status, next_attempt_ms, created_at, updated_at)
           VALUES ('ac_1', 0, 'we_a', 'msg_early', 'intent.succeeded', 'ac_1', 'pending', 1, 'x', 'x')`,
        )
        .run().lastInsertRowid,
    );
    expect(reader.read(50, 2, 0).map((r) => r.seq)).toEqual(all.slice(7, 9));
    reader.restart();
    expect(reader.read(50, 2, 0).map((r) => r.seq)).toEqual([early, all[0]]);
    // Short of the limit: the end of what is due; the next read starts from the beginning again.
    const rest = reader.read(50, 100, 0).map((r) => r.seq);
    expect(rest).toEqual(all.slice(1));
    expect(reader.read(50, 1, 0).map((r) => r.seq)).toEqual([early]);
    // The clock set back before the row the reads ended on: from the beginning.
    reader.read(50, 3, 0);
    expect(reader.read(4, 5, 0).map((r) => r.seq)).toEqual([early]);
  });
});
