import Database from 'better-sqlite3';
import { closeSync, fsync, fsyncSync, mkdirSync, openSync, readSync, readdirSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Config } from '../config.js';
import { DIR_MODE, ownerOnlyFiles } from '../file-modes.js';
import { latestVersion, madeByDevelopmentBuild } from '../db/migrate.js';
import { writeBundle } from './backup-bundle.js';
import { integrityCheckOffLoop } from '../db/threads.js';

export function backupDir(config: Pick<Config, 'backup' | 'data_dir'>): string {
  return config.backup.dir || join(config.data_dir, 'backups');
}

/** `20260101T030000Z`: sorts by time, safe in any file system. */
export function stamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

export interface BackupProgress {
  totalPages: number;
  remainingPages: number;
}

export interface BackupResult {
  file: string;
  bytes: number;
  /** Milliseconds each phase took, in order (bench/backup.ts prints them). */
  phases: Record<string, number>;
}

/** Flushes a file, or a folder's entries, to the disk. */
export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A WAL file this size or smaller holds no frame (its header is 32 bytes). */
const WAL_HEADER_BYTES = 32;

/**
 * Copies the database at `source` to `dest` while the daemon keeps writing. The copy is one
 * consistent committed state: a read transaction is held on a connection of our own for the whole
 * copy, and while it is held SQLite can neither restart the WAL nor checkpoint past our snapshot, so
 * the main file plus the WAL as copied hold every commit up to the snapshot (a page a concurrent
 * checkpoint rewrites while we read it is also in a WAL frame we copy, which wins over the main
 * file's copy when the backup is opened; frames appended after the snapshot are later whole commits
 * or a torn tail that SQLite's frame checksums reject). This is how WAL replicators copy a live
 * database; it runs at file-copy speed in the thread pool, where SQLite's online backup API copies
 * page by page on the event loop (about 4x slower, measured in bench/backup.ts). A database not in
 * WAL mode goes through the backup API. Every row committed before the call is in the copy.
 * Written to `dest.partial`, its WAL folded in, checked with `PRAGMA quick_check` (docs/operations.md
 * says why not the full check), flushed, then renamed: `dest` is either a whole, checked, flushed
 * backup or absent.
 */
export async function backupDatabase(
  source: string,
  dest: string,
  opts: {
    onProgress?: (p: BackupProgress) => void;
    busyTimeoutMs?: number;
    /** What the backup carries besides the database (backup-bundle.ts). */
    bundle?: Record<string, string>;
    /** Check the copy on a thread of its own, not on the caller's (inside the daemon). */
    checkOffLoop?: boolean;
  } = {},
): Promise<BackupResult> {
  // A backup is the whole store's data: owner-only, also under `posd backup --to FILE`.
  mkdirSync(dirname(dest), { recursive: true, mode: DIR_MODE });
  const partial = `${dest}.partial`;
  const dropPartial = () => {
    for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(partial + suffix, { force: true });
  };
  dropPartial();
  const phases: Record<string, number> = {};
  let mark = performance.now();
  const phase = (name: string) => {
    const now = performance.now();
    phases[name] = (phases[name] ?? 0) + (now - mark);
    mark = now;
  };
  let wal = false;
  let walCopied = false;
  const db = new Database(source, { fileMustExist: true });
  try {
    db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
    wal = db.pragma('journal_mode', { simple: true }) === 'wal';
    db.exec('BEGIN');
    const pages = db.pragma('page_count', { simple: true }) as number; // takes the snapshot now
    if (wal) {
      // A WAL without a frame at the snapshot adds nothing to it (whatever is appended from now on
      // is later commits): the database file alone is the snapshot.
      const walBytes = statSync(`${source}-wal`, { throwIfNoEntry: false })?.size ?? 0;
      opts.onProgress?.({ totalPages: pages, remainingPages: pages });
      await copyFile(source, partial);
      if (walBytes > WAL_HEADER_BYTES) {
        await copyFile(`${source}-wal`, `${partial}-wal`);
        walCopied = true;
      }
      opts.onProgress?.({ totalPages: pages, remainingPages: 0 });
    } else {
      await db.backup(partial, {
        progress: (p) => {
          opts.onProgress?.(p);
          // ~1% of the file per step keeps the event loop responsive and the progress bar moving.
          return Math.max(64, Math.ceil(p.totalPages / 100));
        },
      });
    }
    db.exec('COMMIT');
  } catch (err) {
    dropPartial();
    throw err;
  } finally {
    db.close();
  }
  phase('copy');
  try {
    // The copy keeps the source's WAL mode in its header (and a copied WAL beside it); a backup
    // should be one self-contained file that opens without leaving -wal/-shm files beside it.
    if (walCopied) {
      // Leaving WAL mode folds the copied WAL into the file. Nothing is flushed here
      // (synchronous=OFF): the copy is flushed once it is finished, below.
      const copy = new Database(partial);
      try {
        copy.pragma('synchronous = OFF');
        copy.pragma('journal_mode = DELETE');
      } finally {
        copy.close();
      }
    } else if (wal) {
      // Nothing to fold: only the header says WAL. Bytes 18 and 19 (file format write and read
      // versions) are 2 for WAL and 1 for a rollback journal (https://sqlite.org/fileformat2.html).
      setRollbackJournalHeader(partial);
    }
    phase('fold');
    if (opts.bundle) writeBundle(partial, opts.bundle);
    phase('bundle');
    // The check and the flush run side by side. Inside the daemon (the nightly backup) the check runs
    // on a thread of its own so it never holds the event loop; `posd backup` is a process of its own
    // and checks on its main thread, sparing a thread's start. The flush is queued in the thread pool
    // before the check starts: a check on this thread holds the event loop, and a flush that needed
    // the loop once more to start (an asynchronous open first) would wait for the check to end.
    const flushed = fsyncInPool(partial);
    flushed.catch(() => undefined); // awaited below
    let check: Inspection;
    try {
      check = await inspectBackupCopy(partial, { offLoop: opts.checkOffLoop ?? false });
      phases.check = performance.now() - mark;
    } finally {
      await flushed;
      phases.flush = performance.now() - mark;
      mark = performance.now();
    }
    if (!check.ok) throw new Error(`the backup failed its integrity check: ${check.problem}`);
  } catch (err) {
    dropPartial();
    throw err;
  }
  ownerOnlyFiles(partial);
  renameSync(partial, dest);
  phase('rename');
  fsyncPath(dirname(dest));
  phase('dir_fsync');
  return { file: dest, bytes: statSync(dest).size, phases };
}

/** Marks a database file (WAL mode in its header, no WAL beside it) as a rollback-journal file. */
function setRollbackJournalHeader(file: string): void {
  const fd = openSync(file, 'r+');
  try {
    const header = Buffer.alloc(2);
    if (readSync(fd, header, 0, 2, 18) !== 2 || header[0] !== 2 || header[1] !== 2) throw new Error(`${file} is not a WAL-mode database file`);
    writeSync(fd, Buffer.from([1, 1]), 0, 2, 18);
  } finally {
    closeSync(fd);
  }
}

/** An `fsync` of `path` queued in the thread pool now: it runs even while this thread is busy. */
function fsyncInPool(path: string): Promise<void> {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    return Promise.reject(err as Error);
  }
  return new Promise((resolve, reject) => {
    fsync(fd, (err) => {
      try {
        closeSync(fd);
      } catch {
        // the flush's own result is what counts
      }
      if (err) reject(err);
      else resolve();
    });
  });
}

/**
 * How much of a file the integrity check reads through a memory map instead of SQLite's own reads:
 * the whole file where the address space allows. The check reads every page once; mapped, it skips
 * a read call and a copy per page, about a quarter of a backup's time (bench/backup.ts). A 32-bit
 * box maps at most 256 MiB and reads the rest as before.
 */
export function checkMmapBytes(file: string): number {
  const cap = process.arch === 'arm' || process.arch === 'ia32' ? 256 * 1024 * 1024 : 4 * 1024 * 1024 * 1024;
  return Math.min(statSync(file).size, cap);
}

export interface Inspection {
  ok: boolean;
  problem?: string;
  /** Every line of the integrity check that is not `ok` (up to SQLite's 100). */
  findings?: string[];
  schemaVersion?: number;
  /** Made by a development build before 0.1: whole, but no posd of today runs it. */
  development?: boolean;
}

function integrityLinesOf(db: Database.Database, statement: string): string[] {
  return (db.pragma(statement) as Array<Record<string, unknown>>).map((r) => String(Object.values(r)[0]));
}

/**
 * Reads a database file without changing it: the full `PRAGMA integrity_check` (every page, and
 * every index against its table), and whether this posd can run it. `posd doctor` and `posd restore`.
 */
export function inspectDatabase(file: string): Inspection {
  return inspectWith(file, (db) => integrityLinesOf(db, 'integrity_check'));
}

/**
 * `inspectDatabase` of a backup copy (no one else writes it) with `PRAGMA quick_check`: every page
 * and b-tree walked, page accounting, the freelist, record formats, NOT NULL and CHECK; not whether
 * each index agrees with its table (docs/operations.md, Integrity check). On a thread of its own when
 * `offLoop`.
 */
export async function inspectBackupCopy(file: string, opts: { offLoop: boolean }): Promise<Inspection> {
  if (!opts.offLoop) return inspectWith(file, (db) => integrityLinesOf(db, 'quick_check'), 'quick_check');
  let lines: string[];
  try {
    lines = await integrityCheckOffLoop(file, 'quick_check', checkMmapBytes(file));
  } catch (err) {
    return { ok: false, problem: `cannot check ${file}: ${(err as Error).message}` };
  }
  return inspectWith(file, () => lines, 'quick_check');
}

function inspectWith(file: string, integrity: (db: Database.Database) => string[], name = 'integrity_check'): Inspection {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma(`mmap_size = ${checkMmapBytes(file)}`);
  } catch (err) {
    return { ok: false, problem: `cannot open ${file}: ${(err as Error).message}` };
  }
  try {
    let result: string[];
    try {
      result = integrity(db);
    } catch (err) {
      return { ok: false, problem: `cannot check ${file}: ${(err as Error).message}` };
    }
    if (result.length !== 1 || result[0] !== 'ok') {
      const findings = result.filter((line) => line !== 'ok');
      return { ok: false, problem: `${name}: ${findings.slice(0, 3).join('; ')}`, findings };
    }
    const version = db.pragma('user_version', { simple: true }) as number;
    if (madeByDevelopmentBuild(db)) {
      return {
        ok: false,
        problem: `${basename(file)} was made by a development build of posd before 0.1, which this posd does not run`,
        schemaVersion: version,
        development: true,
      };
    }
    const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'accounts'").get();
    if (!hasMeta) return { ok: false, problem: `${basename(file)} is not a posd database (no accounts table)`, schemaVersion: version };
    if (version > latestVersion()) {
      return { ok: false, problem: `schema version ${version} is newer than this posd understands (${latestVersion()})`, schemaVersion: version };
    }
    return { ok: true, schemaVersion: version };
  } catch (err) {
    return { ok: false, problem: (err as Error).message };
  } finally {
    db.close();
  }
}

/**
 * The indexes to rebuild when every finding of a full integrity check is an index that disagrees
 * with its table (an entry missing, or a wrong count): `REINDEX` rebuilds them from the tables. Null
 * when any finding is something else (a damaged page, a NOT NULL or CHECK failure, a duplicate in a
 * UNIQUE index, whose rows the tables themselves hold twice), which no rebuild repairs.
 */
export function repairableIndexes(findings: string[]): string[] | null {
  const names = new Set<string>();
  for (const line of findings) {
    const m = /^row \d+ missing from index (\S+)$/.exec(line) ?? /^wrong # of entries in index (\S+)$/.exec(line);
    if (!m) return null;
    names.add(m[1]);
  }
  return names.size > 0 ? [...names] : null;
}

/** Deletes the oldest nightly backups past `keep`; manual backups are never deleted. */
export function pruneNightly(dir: string, keep: number): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => /^nightly-\d{8}T\d{6}Z\.db$/.test(n));
  } catch {
    return [];
  }
  const old = names.sort().reverse().slice(keep);
  for (const n of old) for (const suffix of ['', '-wal', '-shm']) rmSync(join(dir, n + suffix), { force: true });
  return old;
}
