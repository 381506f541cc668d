import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { checkpointGate, holdCheckpoints } from '../../src/db/checkpoint-gate.js';
import { startCheckpointer, type CheckpointResult } from '../../src/db/checkpointer.js';
import { afterCommit, GroupCommitter } from '../../src/db/group-commit.js';
import { type SyncFile, WalFlusher } from '../../src/db/wal-flush.js';
import { until } from '../helpers/until.js';

// Decision 0288: no checkpoint starts while a charge's batch is between its commit and its frame.

/** A disk whose flushes end (or fail) when the test says. */
function heldDisk() {
  const pending: Array<(error: Error | null) => void> = [];
  const sync: SyncFile = (_file, done) => pending.push(done);
  return { sync, pending, release: (error: Error | null = null) => pending.shift()!(error) };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('a charge holds checkpoints off until its frame has left (src/db/checkpoint-gate.ts)', () => {
  let dir: string;
  let db: Db;
  let file: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'posd-ckpt-gate-'));
    file = join(dir, 'x.db');
    db = openDatabase(file, { migrate: false });
    db.exec('CREATE TABLE t (v TEXT NOT NULL) STRICT');
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const held = () => Atomics.load(checkpointGate(db), 0);
  const insert = (v: string) => db.prepare('INSERT INTO t (v) VALUES (?)').run(v);

  it('holds from the job that offers a charge until its frame ran, and not for a plain write', async () => {
    const disk = heldDisk();
    const gc = new GroupCommitter(db, 64, new WalFlusher(`${db.name}-wal`, disk.sync));
    const plain = gc.run(() => insert('plain'));
    await turn();
    expect(held()).toBe(0);
    disk.release();
    await plain;
    const seen: number[] = [];
    const charge = gc.run(() => {
      insert('charge');
      afterCommit(db, () => seen.push(held()), { first: true });
    });
    await turn();
    expect(disk.pending).toHaveLength(1);
    expect(held()).toBe(1);
    disk.release();
    await charge;
    // The frame went out while still held; released right after it.
    expect(seen).toEqual([1]);
    expect(held()).toBe(0);
  });

  it('releases when the job fails, and when the flush fails', async () => {
    const disk = heldDisk();
    const gc = new GroupCommitter(db, 64, new WalFlusher(`${db.name}-wal`, disk.sync));
    const failed = gc.run(() => {
      insert('x');
      afterCommit(db, () => undefined, { first: true });
      throw new Error('refused');
    });
    await turn();
    // Released as the job failed, before its batch's flush ends.
    expect(held()).toBe(0);
    disk.release();
    await expect(failed).rejects.toThrow('refused');
    const unflushed = gc.run(() => {
      insert('y');
      afterCommit(db, () => undefined, { first: true });
    });
    await turn();
    expect(held()).toBe(1);
    disk.release(new Error('EIO'));
    await expect(unflushed).rejects.toThrow('EIO');
    expect(held()).toBe(0);
  });

  it('the checkpoint thread copies nothing while a charge is held, and checkpoints once it is released', async () => {
    const results: CheckpointResult[] = [];
    const release = holdCheckpoints(db);
    const cp = startCheckpointer(db, {
      file,
      intervalMs: 5,
      holdMaxMs: 60_000,
      synchronous: 'FULL',
      busyTimeoutMs: 1000,
      log: pino({ level: 'silent' }),
    });
    cp.notifier.on('checkpoint', (r: CheckpointResult) => results.push(r));
    try {
      for (let i = 0; i < 50; i++) db.transaction(() => insert('z'.repeat(8_000))).immediate();
      // Forty of its intervals: unheld, the thread would have checkpointed (and reported) by now.
      const from = performance.now();
      await until('forty checkpoint intervals', () => performance.now() - from > 200);
      expect(results).toEqual([]);
      release();
      const done = await until('a checkpoint after the release', () => results.find((r) => r.walPages > 0 && r.checkpointedPages === r.walPages));
      expect(done.checkpointedPages).toBeGreaterThan(0);
    } finally {
      release();
      await cp.stop();
    }
  });
});
