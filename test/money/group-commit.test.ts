import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { GroupCommitter } from '../../src/db/group-commit.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { rows } from './helpers.js';

describe('group commit', () => {
  let dir: string;
  let db: Db;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'posd-gc-'));
    db = openDatabase(join(dir, 'x.db'));
    db.exec('CREATE TABLE t (v INTEGER NOT NULL UNIQUE) STRICT');
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits a batch once; a failing job rolls back only its own writes', async () => {
    const gc = new GroupCommitter(db);
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    // All three run inside one outer transaction: each sees it open.
    const open: boolean[] = [];
    const jobs = [
      gc.run(() => {
        open.push(db.inTransaction);
        return insert.run(1).changes;
      }),
      gc.run(() => {
        insert.run(2);
        throw new Error('job 2 fails after writing');
      }),
      gc.run(() => {
        open.push(db.inTransaction);
        return insert.run(3).changes;
      }),
    ];
    const settled = await Promise.allSettled(jobs);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason.message).toBe('job 2 fails after writing');
    expect(db.prepare('SELECT v FROM t ORDER BY v').all()).toEqual([{ v: 1 }, { v: 3 }]);
    expect(open).toEqual([true, true]);
    expect(db.inTransaction).toBe(false);
  });

  it('a job breaking a constraint rejects alone', async () => {
    const gc = new GroupCommitter(db);
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    const settled = await Promise.allSettled([gc.run(() => insert.run(10)), gc.run(() => insert.run(10)), gc.run(() => insert.run(11))]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(db.prepare('SELECT count(*) AS n FROM t WHERE v IN (10, 11)').get()).toEqual({ n: 2 });
  });
});

describe('cash sales sent together', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ config: { limits: { per_key_per_second: 1000 } } });
  });
  afterAll(() => s.stop());

  it('each get their own intent, receipt number, event and sync record', async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => s.api('POST', '/cash_sales', { body: { amount_in_cents: 100 + i } })));
    expect(answers.every((a) => a.status === 201)).toBe(true);
    const ids = new Set(answers.map((a) => a.body.id));
    expect(ids.size).toBe(30);
    const intents = rows(s, `SELECT receipt_number FROM intents WHERE type = 'cash' ORDER BY receipt_number`);
    expect(intents.map((r) => r.receipt_number)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(rows(s, `SELECT id FROM events WHERE type = 'intent.succeeded'`)).toHaveLength(30);
    expect(rows(s, `SELECT id FROM sync_outbox WHERE kind = 'cash_sale'`)).toHaveLength(30);
    const amounts = rows(s, 'SELECT amount_in_cents FROM cash_intents ORDER BY amount_in_cents').map((r) => r.amount_in_cents);
    expect(amounts).toEqual(Array.from({ length: 30 }, (_, i) => 100 + i));
  });
});
