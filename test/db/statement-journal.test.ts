import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { GroupCommitter } from '../../src/db/group-commit.js';
import { type SyncFile, WalFlusher } from '../../src/db/wal-flush.js';

// Each job of a group commit runs in a savepoint, so SQLite keeps the content a page had before
// each job that changes it in the statement journal; past 64 KiB that journal spilled to a deleted
// temporary file, two `pwrite`s per page (28 of a cash sale's 35 page writes, decision 0292). On
// the daemon's connection it stays in memory until the batch commits.

/**
 * SQLite's temporary files this process holds open now: named `etilqs_…` and unlinked at open, or
 * made with O_TMPFILE (`/var/tmp/#<inode> (deleted)`).
 */
function openTemporaryFiles(): string[] {
  const found: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (/etilqs_|\/#\d+ \(deleted\)$/.test(target)) found.push(target);
    } catch {
      // closed between the listing and the read
    }
  }
  return found;
}

const disk: SyncFile = (_file, done) => done(null);

describe.runIf(process.platform === 'linux')('a group commit keeps its statement journal in memory (src/db/database.ts)', () => {
  let dir: string;
  let db: Db;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'posd-stmt-journal-'));
    db = openDatabase(join(dir, 'x.db'));
    // Random keys: each job's rows land on pages an earlier job of the batch changed too.
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT NOT NULL) STRICT');
    const fill = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    db.transaction(() => {
      for (let i = 0; i < 4000; i++) fill.run(randomBytes(10).toString('hex'), 'x'.repeat(60));
    })();
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('opens no temporary file while a batch of 40 savepoints changes ~400 pages', async () => {
    const gc = new GroupCommitter(db, 64, new WalFlusher(`${db.name}-wal`, disk));
    const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    const before = new Set(openTemporaryFiles());
    const seen: string[][] = [];
    const jobs = Array.from({ length: 40 }, (_, j) =>
      gc.run(() => {
        for (let i = 0; i < 10; i++) insert.run(randomBytes(10).toString('hex'), 'y'.repeat(60));
        if (j >= 30) seen.push(openTemporaryFiles().filter((f) => !before.has(f)));
        return j;
      }),
    );
    expect(await Promise.all(jobs)).toHaveLength(40);
    // Under the default temp_store the journal passed 64 KiB by job 10 and these jobs saw its file.
    expect(seen).toHaveLength(10);
    expect(seen.flat()).toEqual([]);
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(4400);
    expect(db.pragma('temp_store', { simple: true })).toBe(2);
  });

  it('a failed job still rolls back alone from the in-memory journal', async () => {
    const gc = new GroupCommitter(db, 64, new WalFlusher(`${db.name}-wal`, disk));
    const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    const before = db.prepare('SELECT count(*) FROM t').pluck().get() as number;
    const write = (n: number, fail: boolean) =>
      gc.run(() => {
        for (let i = 0; i < n; i++) insert.run(randomBytes(10).toString('hex'), 'z'.repeat(60));
        if (fail) throw new Error('refused');
      });
    const outcomes = await Promise.allSettled([write(50, false), write(200, true), write(50, false)]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(before + 100);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  });
});
