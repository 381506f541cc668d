import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { startCheckpointer, type CheckpointResult } from '../../src/db/checkpointer.js';
import { startTestServer } from '../helpers/server.js';

describe('WAL checkpoint thread', () => {
  let dir: string;
  let file: string;
  let db: Db;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'posd-ckpt-'));
    file = join(dir, 'x.db');
    db = openDatabase(file, { synchronous: 'NORMAL', migrate: false });
    db.exec('CREATE TABLE t (v TEXT NOT NULL) STRICT');
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('copies the WAL into the database file from its own thread; the connection keeps only a backstop', async () => {
    const cp = startCheckpointer(db, { file, intervalMs: 5, synchronous: 'NORMAL', busyTimeoutMs: 1000, log: pino({ level: 'silent' }) });
    try {
      expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(10_000);
      const before = statSync(file).size;
      const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
      // About 1000 pages of WAL.
      for (let i = 0; i < 200; i++) db.transaction(() => insert.run('x'.repeat(20_000))).immediate();
      // Only a checkpoint moves pages into the database file, and this connection's own would wait
      // for 10,000 pages: the file grows to hold the rows through the thread alone.
      const done = await new Promise<CheckpointResult>((resolve) => {
        const on = (r: CheckpointResult) => {
          if (r.walPages > 0 && r.checkpointedPages === r.walPages && statSync(file).size > before + 200 * 20_000) {
            cp.notifier.off('checkpoint', on);
            resolve(r);
          }
        };
        cp.notifier.on('checkpoint', on);
      });
      expect(done.checkpointedPages).toBe(done.walPages);
      expect(statSync(file).size).toBeGreaterThan(before + 200 * 20_000);
    } finally {
      await cp.stop();
    }
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(200);
  });

  it('runs in the daemon by default and not when the interval is 0', async () => {
    const on = await startTestServer();
    const off = await startTestServer({ config: { database: { checkpoint_interval_ms: 0 } } });
    try {
      expect(on.daemon.ctx.db.pragma('wal_autocheckpoint', { simple: true })).toBe(10_000);
      expect(off.daemon.ctx.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
      const res = await on.api('POST', '/customers', { body: { name: 'Ana' } });
      expect(res.status).toBeLessThan(300);
    } finally {
      await on.stop();
      await off.stop();
    }
  });
});
