import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { afterCommit, GroupCommitter } from '../../src/db/group-commit.js';
import { type SyncFile, WalFlusher } from '../../src/db/wal-flush.js';

// A batch that carries what waits on it alone (a terminal's charge, decision 0291): its flush starts
// without the gathering wait of decision 0273, and its `first` signals run before the batch's others.

/** A disk whose flushes end when the test says. */
function heldDisk() {
  const pending: Array<(error: Error | null) => void> = [];
  const sync: SyncFile = (_file, done) => pending.push(done);
  return { sync, pending, release: () => pending.shift()!(null) };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('a charge-carrying batch flushes at once (src/db/group-commit.ts, WalFlusher.flushNow)', () => {
  let dir: string;
  let db: Db;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'posd-charge-first-'));
    db = openDatabase(join(dir, 'x.db'));
    db.exec('CREATE TABLE t (v INTEGER NOT NULL) STRICT');
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const insert = (v: number) => () => db.prepare('INSERT INTO t (v) VALUES (?)').run(v).changes;

  /** A slow disk (10 ms a flush on this clock) whose first flush answered two commits: the next would gather. */
  async function afterSlowFlushOfTwo() {
    const disk = heldDisk();
    let t = 0;
    const gc = new GroupCommitter(db, 64, new WalFlusher(`${db.name}-wal`, disk.sync, () => (t += 10)));
    const two = [gc.run(insert(1)), gc.run(insert(2))];
    await turn();
    expect(disk.pending).toHaveLength(1);
    return { gc, disk, two };
  }

  it('after a slow flush of two, a charge flushes in the turn it commits: no gathering wait', async () => {
    const { gc, disk, two } = await afterSlowFlushOfTwo();
    disk.release();
    await Promise.all(two);
    const sent: string[] = [];
    const charge = gc.run(() => {
      insert(5)();
      afterCommit(db, () => sent.push('charge'), { first: true });
    });
    // The batch runs in the check phase, before this turn's end: its flush started with it (a plain
    // write would wait for two more commits or half a flush, test/db/wal-flush.test.ts).
    await turn();
    expect(disk.pending).toHaveLength(1);
    expect(sent).toEqual([]);
    disk.release();
    await charge;
    expect(sent).toEqual(['charge']);
  });

  it('a charge committed during a slow flush of two goes in the next flush at once, and its frame leaves first', async () => {
    const { gc, disk, two } = await afterSlowFlushOfTwo();
    const order: string[] = [];
    const other = gc.run(() => {
      insert(6)();
      afterCommit(db, () => order.push('other signal'));
    });
    const charge = gc.run(() => {
      insert(7)();
      afterCommit(db, () => order.push('charge'), { first: true });
      afterCommit(db, () => order.push('charge signal'));
    });
    await turn();
    disk.release();
    await Promise.all(two);
    // No gathering wait after the flush of two: the charge's flush is already running.
    expect(disk.pending).toHaveLength(1);
    disk.release();
    await Promise.all([other, charge]);
    expect(order).toEqual(['charge', 'other signal', 'charge signal']);
  });

  it('a job that fails runs none of its first signals', async () => {
    const disk = heldDisk();
    const gc = new GroupCommitter(db, 64, new WalFlusher(`${db.name}-wal`, disk.sync, () => 0));
    const sent: string[] = [];
    const failed = gc.run(() => {
      insert(8)();
      afterCommit(db, () => sent.push('charge'), { first: true });
      throw new Error('refused');
    });
    const ok = gc.run(insert(9));
    await turn();
    disk.release();
    await expect(failed).rejects.toThrow('refused');
    await ok;
    expect(sent).toEqual([]);
  });
});
