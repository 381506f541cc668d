import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { afterCommit, GroupCommitter } from '../../src/db/group-commit.js';
import { FLUSHES_AT_ONCE, type SyncFile, syncFileOffLoop, WalFlusher, walFlusherOf, whenDurable } from '../../src/db/wal-flush.js';
import { until } from '../helpers/until.js';

/** A disk whose flushes end when the test says: each call waits in `pending` until released. */
function heldDisk() {
  const pending: Array<(error: Error | null) => void> = [];
  const files: string[] = [];
  const sync: SyncFile = (file, done) => {
    files.push(file);
    pending.push(done);
  };
  return {
    sync,
    pending,
    files,
    release: (error: Error | null = null) => pending.shift()!(error),
    /** Ends the flush that started `i`-th among those still pending. */
    releaseAt: (i: number, error: Error | null = null) => pending.splice(i, 1)[0](error),
  };
}

/** This process's descriptors open on `file` (Linux: /proc/self/fd). */
const descriptorsOn = (file: string) =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).replace(/ \(deleted\)$/, '') === file;
    } catch {
      return false;
    }
  }).length;

const settledState = async (p: Promise<unknown>) => {
  let state = 'pending';
  p.then(
    () => (state = 'fulfilled'),
    () => (state = 'rejected'),
  );
  // Two turns of the loop: a group commit runs in the check phase after it is asked for.
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  return state;
};

describe('group commit with the flush off the event loop (src/db/wal-flush.ts)', () => {
  let dir: string;
  let db: Db;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'posd-wal-flush-'));
    db = openDatabase(join(dir, 'x.db'));
    db.exec('CREATE TABLE t (v INTEGER NOT NULL UNIQUE) STRICT');
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a batch, and runs its signals, only once the flush after its commit has ended; reads go on meanwhile', async () => {
    const disk = heldDisk();
    const gc = new GroupCommitter(db, 64, new WalFlusher(`${db.name}-wal`, disk.sync));
    const signals: string[] = [];
    const job = gc.run(() => {
      db.prepare('INSERT INTO t (v) VALUES (1)').run();
      afterCommit(db, () => signals.push('after'));
      return 'one';
    });
    expect(await settledState(job)).toBe('pending');
    // Committed (a read on the same connection sees it) and the connection back at FULL...
    expect(db.prepare('SELECT count(*) AS n FROM t WHERE v = 1').get()).toEqual({ n: 1 });
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    // ...but neither answered nor signalled before the disk says it holds it.
    expect(signals).toEqual([]);
    expect(disk.files).toEqual([`${db.name}-wal`]);
    disk.release();
    await expect(job).resolves.toBe('one');
    expect(signals).toEqual(['after']);
  });

  it('a write committed unflushed is answered at its commit and starts no flush; the next write waits for one that covers both', async () => {
    const disk = heldDisk();
    const flusher = new WalFlusher(`${db.name}-wal`, disk.sync);
    const gc = new GroupCommitter(db, 64, flusher);
    const claim = gc.run(() => db.prepare('INSERT INTO t (v) VALUES (5)').run().changes, true);
    expect(await settledState(claim)).toBe('fulfilled');
    await expect(claim).resolves.toBe(1);
    expect(disk.pending).toHaveLength(0);
    // Not on disk yet: whoever must wait for it (a replayed answer) gets a flush.
    const durable = flusher.whenDurable();
    expect(disk.pending).toHaveLength(1);
    disk.release();
    await durable;
    // The claim then the write: one flush, started after the write's commit, covers both.
    const nextClaim = gc.run(() => db.prepare('INSERT INTO t (v) VALUES (6)').run(), true);
    await nextClaim;
    const write = gc.run(() => db.prepare('INSERT INTO t (v) VALUES (7)').run());
    expect(await settledState(write)).toBe('pending');
    expect(disk.pending).toHaveLength(1);
    disk.release();
    await write;
    expect(disk.pending).toHaveLength(0);
    expect(await settledState(flusher.whenDurable())).toBe('fulfilled');
    // Its afterCommit signals still wait for the disk: a flush starts for them.
    const signals: string[] = [];
    await gc.run(() => {
      db.prepare('INSERT INTO t (v) VALUES (8)').run();
      afterCommit(db, () => signals.push('after'));
    }, true);
    expect(signals).toEqual([]);
    expect(disk.pending).toHaveLength(1);
    disk.release();
    await until('the signal ran', () => signals.length === 1);
  });

  it('batches that commit during a flush wait for the next one, which carries them all, in order', async () => {
    const disk = heldDisk();
    // A fast disk (every flush takes no time on this clock): the next flush starts at once.
    const gc = new GroupCommitter(db, 64, new WalFlusher(`${db.name}-wal`, disk.sync, () => 0));
    const order: number[] = [];
    const first = gc.run(() => db.prepare('INSERT INTO t (v) VALUES (10)').run()).then(() => order.push(10));
    expect(await settledState(first)).toBe('pending');
    const second = gc.run(() => db.prepare('INSERT INTO t (v) VALUES (11)').run()).then(() => order.push(11));
    expect(await settledState(second)).toBe('pending');
    const third = gc.run(() => db.prepare('INSERT INTO t (v) VALUES (12)').run()).then(() => order.push(12));
    expect(await settledState(third)).toBe('pending');
    // Three commits, one flush running and one waiting to start.
    expect(disk.pending).toHaveLength(1);
    disk.release();
    await first;
    expect(disk.pending).toHaveLength(1);
    expect(order).toEqual([10]);
    disk.release();
    await Promise.all([second, third]);
    expect(order).toEqual([10, 11, 12]);
  });

  it('after a slow flush, the next one waits for the writers it answered, or half a flush', async () => {
    const disk = heldDisk();
    // Every flush takes 8 ms on this clock: a slow disk.
    let t = 0;
    // One flush at a time (a fast disk, or one that runs flushes one after the other).
    const flusher = new WalFlusher('f', disk.sync, () => (t += 4), 1);
    const first = [flusher.committed(3)];
    expect(disk.pending).toHaveLength(1);
    // Two writers commit during the flush; it ends having answered three.
    const during = flusher.committed(2);
    disk.release();
    await Promise.all(first);
    // Not started yet: it waits for 2 + 3 commits.
    expect(disk.pending).toHaveLength(0);
    const back = [flusher.committed(1), flusher.committed(1)];
    expect(disk.pending).toHaveLength(0);
    back.push(flusher.committed(1));
    // The answered writers are back: it starts at once, carrying all of them.
    expect(disk.pending).toHaveLength(1);
    disk.release();
    await Promise.all([during, ...back]);
    // It answered five: the next waits for five, and with only one coming, starts half a flush later.
    const late = flusher.committed(1);
    expect(disk.pending).toHaveLength(0);
    await until('the half-flush wait ended', () => disk.pending.length === 1);
    disk.release();
    await late;
    // That flush carried one commit (a lone writer): the next commit, with another waiting, goes at once.
    const alone = flusher.committed(1);
    expect(disk.pending).toHaveLength(1);
    const next = flusher.committed(1);
    disk.release();
    await alone;
    expect(disk.pending).toHaveLength(1);
    disk.release();
    await next;
  });

  it('a flush that fails answers the batch with its error', async () => {
    const disk = heldDisk();
    const gc = new GroupCommitter(db, 64, new WalFlusher(`${db.name}-wal`, disk.sync));
    const job = gc.run(() => db.prepare('INSERT INTO t (v) VALUES (20)').run());
    expect(await settledState(job)).toBe('pending');
    disk.release(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await expect(job).rejects.toThrow('EIO');
  });

  it('after a flush that failed, the next caller flushes again instead of taking it for done', async () => {
    const disk = heldDisk();
    const flusher = new WalFlusher('f', disk.sync);
    const commit = flusher.committed();
    disk.release(new Error('EIO'));
    await expect(commit).rejects.toThrow('EIO');
    const again = flusher.whenDurable();
    expect(await settledState(again)).toBe('pending');
    expect(disk.pending).toHaveLength(1);
    disk.release();
    await again;
  });

  it('whenDurable waits for a flush running or due, and answers at once when none is', async () => {
    const disk = heldDisk();
    const flusher = new WalFlusher('f', disk.sync);
    expect(await settledState(flusher.whenDurable())).toBe('fulfilled');
    const commit = flusher.committed();
    const durable = flusher.whenDurable();
    expect(await settledState(durable)).toBe('pending');
    disk.release();
    await Promise.all([commit, durable]);
    expect(await settledState(flusher.whenDurable())).toBe('fulfilled');
  });

  it("the daemon's own database flushes its WAL for real; in memory, or at NORMAL, nothing is held", async () => {
    expect(walFlusherOf(db)?.file).toBe(`${db.name}-wal`);
    await expect(new GroupCommitter(db).run(() => db.prepare('INSERT INTO t (v) VALUES (30)').run().changes)).resolves.toBe(1);
    await whenDurable(db);
    const memory = openDatabase(':memory:');
    const normal = openDatabase(join(dir, 'normal.db'), { synchronous: 'NORMAL' });
    try {
      expect(walFlusherOf(memory)).toBeNull();
      expect(walFlusherOf(normal)).toBeNull();
    } finally {
      memory.close();
      normal.close();
    }
  });

  it('keeps its set of descriptors on the WAL across flushes, and closes them once the database is closed', async () => {
    const own = openDatabase(join(dir, 'kept.db'));
    const wal = `${own.name}-wal`;
    own.exec('CREATE TABLE k (v INTEGER) STRICT');
    const gc = new GroupCommitter(own);
    // Before any flush the flusher holds nothing (SQLite's own descriptor is the one counted).
    const sqlites = descriptorsOn(wal);
    for (let i = 0; i < 5; i++) await gc.run(() => own.prepare('INSERT INTO k (v) VALUES (?)').run(i));
    await Promise.all([1, 2, 3].map((v) => gc.run(() => own.prepare('INSERT INTO k (v) VALUES (?)').run(v))));
    expect(descriptorsOn(wal)).toBe(sqlites + FLUSHES_AT_ONCE);
    own.close();
    await until("the flusher closed its descriptors on the closed database's WAL", () => descriptorsOn(wal) === 0);
  });

  it('runs flushes side by side, each on a descriptor of its own set, and closes the set once the database is closed', async () => {
    const file = join(dir, 'plain');
    writeFileSync(file, 'x');
    let open = true;
    const sync = syncFileOffLoop(() => open, 3);
    const flush = () => new Promise<Error | null>((resolve) => sync(file, resolve));
    // Four asked at once: three run, the fourth waits for a descriptor; all succeed.
    expect(await Promise.all([flush(), flush(), flush(), flush()])).toEqual([null, null, null, null]);
    expect(descriptorsOn(file)).toBe(3);
    expect(await flush()).toBeNull();
    expect(descriptorsOn(file)).toBe(3);
    open = false;
    await until('the set closed with its database', () => descriptorsOn(file) === 0);
  });
});

describe('flushes side by side on a slow disk (decision 0298)', () => {
  /** A flusher on a held disk and a clock the test moves, allowing four flushes at once. */
  function slowFlusher() {
    const disk = heldDisk();
    const clock = { t: 0 };
    const flusher = new WalFlusher('f', disk.sync, () => clock.t, 4);
    return { disk, clock, flusher };
  }
  /** One flush of `ms` on the clock that answered one commit: the disk is known slow from then on. */
  async function afterSlowFlush(s: ReturnType<typeof slowFlusher>, ms = 8) {
    const first = s.flusher.committed();
    s.clock.t += ms;
    s.disk.release();
    await first;
  }

  it('starts the next flush beside the running one a quarter of a flush later, and answers them in order', async () => {
    const s = slowFlusher();
    await afterSlowFlush(s);
    const order: string[] = [];
    const a = s.flusher.committed(2).then(() => order.push('a'));
    expect(s.disk.pending).toHaveLength(1);
    // A quarter of the last flush (8 ms) later, the next commit's flush starts at once beside it.
    s.clock.t += 2;
    const b = s.flusher.committed().then(() => order.push('b'));
    expect(s.disk.pending).toHaveLength(2);
    // Sooner than that, a commit waits for the spacing: its flush starts on a timer.
    s.clock.t += 1;
    const c = s.flusher.committed().then(() => order.push('c'));
    expect(s.disk.pending).toHaveLength(2);
    s.clock.t += 1;
    await until("the spacing wait ended and c's flush started", () => s.disk.pending.length === 3);
    // The middle flush ends first: it started after a's commit too, so a and b are answered, in
    // commit order; c, whose commit came after b's flush started, waits for its own.
    s.disk.releaseAt(1);
    await Promise.all([a, b]);
    expect(order).toEqual(['a', 'b']);
    expect(await settledState(c)).toBe('pending');
    // The oldest flush, already answered for, ends: nothing more is answered.
    s.clock.t += 8;
    s.disk.release();
    expect(await settledState(c)).toBe('pending');
    s.disk.release();
    await c;
    expect(order).toEqual(['a', 'b', 'c']);
    // whenDurable joins the newest flight while it runs, and answers after the older ones.
    const d = s.flusher.committed();
    const durable = s.flusher.whenDurable();
    expect(await settledState(durable)).toBe('pending');
    s.disk.release();
    await Promise.all([d, durable]);
  });

  it('runs at most four at once; a charge (flushNow) skips the spacing wait, not the limit', async () => {
    const s = slowFlusher();
    await afterSlowFlush(s);
    const all: Array<Promise<void>> = [];
    for (let i = 0; i < 4; i++) {
      all.push(s.flusher.committed());
      s.clock.t += 2;
    }
    expect(s.disk.pending).toHaveLength(4);
    all.push(s.flusher.committed());
    s.flusher.flushNow();
    expect(s.disk.pending).toHaveLength(4);
    s.disk.release();
    // A flush ended: the fifth starts in that turn.
    await all[0];
    expect(s.disk.pending).toHaveLength(4);
    s.clock.t += 8;
    while (s.disk.pending.length) s.disk.release();
    await Promise.all(all);
    // Right after a start, a charge's commit goes beside it at once.
    const plain = s.flusher.committed();
    const charge = s.flusher.committed();
    expect(s.disk.pending).toHaveLength(1);
    s.flusher.flushNow();
    expect(s.disk.pending).toHaveLength(2);
    s.disk.release();
    s.disk.release();
    await Promise.all([plain, charge]);
  });

  it('a flush that fails beside others answers only its own waiters with the error; the next caller flushes again', async () => {
    const s = slowFlusher();
    await afterSlowFlush(s);
    const a = s.flusher.committed();
    s.clock.t += 2;
    const b = s.flusher.committed();
    expect(s.disk.pending).toHaveLength(2);
    s.disk.releaseAt(1, new Error('EIO'));
    s.clock.t += 8;
    s.disk.release();
    await a;
    await expect(b).rejects.toThrow('EIO');
    const again = s.flusher.whenDurable();
    expect(s.disk.pending).toHaveLength(1);
    s.disk.release();
    await again;
  });

  it('goes one flush at a time once flushes started beside another take half as long again, six times in a row', async () => {
    const s = slowFlusher();
    await afterSlowFlush(s, 4);
    /** A flush started 2 ms after another (of 4 ms) that ends `after` ms after it. */
    const pair = async (after: number) => {
      const older = s.flusher.committed();
      s.clock.t += 2;
      const beside = s.flusher.committed();
      expect(s.disk.pending).toHaveLength(2);
      s.clock.t += 2;
      s.disk.release();
      await older;
      s.clock.t += after;
      s.disk.release();
      await beside;
    };
    // Flush times that vary: five slow ones in a row, then one that is not, start the count again.
    for (let i = 0; i < 5; i++) await pair(4);
    await pair(0);
    for (let i = 0; i < 5; i++) await pair(4);
    const still = s.flusher.committed();
    s.clock.t += 2;
    const overlapping = s.flusher.committed();
    expect(s.disk.pending).toHaveLength(2);
    s.clock.t += 2;
    s.disk.release();
    s.disk.release();
    await Promise.all([still, overlapping]);
    // A disk that runs them one after the other: a flush started 2 ms after another (of 4 ms)
    // ends 4 ms after it, having taken 6.
    for (let i = 0; i < 6; i++) await pair(4);
    // Found serial: a commit during a flush waits for it, then (one commit answered) goes at once.
    const first = s.flusher.committed();
    s.clock.t += 2;
    const second = s.flusher.committed();
    expect(s.disk.pending).toHaveLength(1);
    s.clock.t += 4;
    s.disk.release();
    await first;
    expect(s.disk.pending).toHaveLength(1);
    s.clock.t += 4;
    s.disk.release();
    await second;
    // A second later flushes overlap again.
    s.clock.t += 1000;
    const third = s.flusher.committed();
    s.clock.t += 2;
    const fourth = s.flusher.committed();
    expect(s.disk.pending).toHaveLength(2);
    s.disk.release();
    s.disk.release();
    await Promise.all([third, fourth]);
  });

  it('on a disk of random flush times, some failing, answers no commit before a flush that started after it ended, and none stays waiting', async () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    // Commits made so far, and the most of them a flush that ended well started after.
    let commits = 0;
    let covered = 0;
    let running = 0;
    let mostRunning = 0;
    const disk: SyncFile = (_file, done) => {
      const covers = commits;
      mostRunning = Math.max(mostRunning, ++running);
      setTimeout(
        () => {
          running--;
          const failed = random() < 0.03;
          if (!failed) covered = Math.max(covered, covers);
          done(failed ? new Error('EIO') : null);
        },
        2 + random() * 8,
      );
    };
    const flusher = new WalFlusher('f', disk, undefined, 6);
    let early = 0;
    let settled = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let i = 0; i < 40; i++) {
          const mine = commits++;
          const durable = flusher.committed();
          if (random() < 0.05) flusher.flushNow();
          await durable.then(
            () => {
              if (mine >= covered) early++;
            },
            () => {},
          );
          settled++;
          if (random() < 0.3) await new Promise((r) => setTimeout(r, random() * 3));
        }
      }),
    );
    expect(settled).toBe(800);
    expect(early).toBe(0);
    expect(mostRunning).toBeGreaterThan(1);
    expect(mostRunning).toBeLessThanOrEqual(6);
  });
});
