import Database from 'better-sqlite3';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { copyFile, open } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { Config } from '../config.js';
import { DIR_MODE, ownerOnlyFiles } from './file-modes.js';
import { latestVersion, madeByDevelopmentBuild } from '../db/migrate.js';
import { writeBundle } from './backup-bundle.js';
import { integrityCheckOffLoop } from '../db/threads.js';

export function backupDir(config: Pick<Config, 'backup' | 'data_dir'>): string {
  return config.backup.dir || join(config.data_dir, 'backups');
}

/** `20260101T030000Z`: sorts by time, safe in any file system. */
export function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
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

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

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
 * Written to `dest.partial`, its WAL folded in, checked with `PRAGMA integrity_check`, flushed, then
 * renamed: `dest` is either a whole, checked backup or absent.
 */
export async function backupDatabase(
  source: string,
  dest: string,
  opts: {
    onProgress?: (p: BackupProgress) => void;
    busyTimeoutMs?: number;
    /** What the backup carries besides the database (backup-bundle.ts). */
    bundle?: Record<string, string>;
    /** Check the copy on threads of its own only, none on the caller's (inside the daemon). */
    checkOffLoop?: boolean;
    /** Threads the integrity check may use (default: checkThreads, 1 below SPLIT_CHECK_MIN_BYTES). */
    checkThreads?: number;
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
  const db = new Database(source, { fileMustExist: true });
  try {
    db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
    const wal = db.pragma('journal_mode', { simple: true }) === 'wal';
    db.exec('BEGIN');
    const pages = db.pragma('page_count', { simple: true }) as number; // takes the snapshot now
    if (wal) {
      opts.onProgress?.({ totalPages: pages, remainingPages: pages });
      await copyFile(source, partial);
      if (existsSync(`${source}-wal`)) await copyFile(`${source}-wal`, `${partial}-wal`);
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
  // The copy keeps the source's WAL mode in its header (and a copied WAL beside it); a backup should
  // be one self-contained file that opens without leaving -wal/-shm files beside it. Leaving WAL mode
  // folds the copied WAL into the file. Nothing is flushed yet (synchronous=OFF): the copy is
  // flushed once, below, before it is renamed into place.
  try {
    const copy = new Database(partial);
    try {
      copy.pragma('synchronous = OFF');
      copy.pragma('journal_mode = DELETE');
    } finally {
      copy.close();
    }
    phase('fold');
    if (opts.bundle) writeBundle(partial, opts.bundle);
    phase('bundle');
    // The flush (in the thread pool) and the integrity check run side by side. Inside the daemon
    // (the nightly backup) the check runs on threads of its own so it never holds the event loop;
    // `posd backup` is a process of its own and runs a share of the check on its main thread, sparing
    // a thread's start. A large copy is checked by several threads at once (planIntegrityCheck).
    const flushed = fsyncPathAsync(partial).then(() => {
      phases.flush = performance.now() - mark;
    });
    let check: Inspection;
    try {
      check = await inspectBackupCopy(partial, { offLoop: opts.checkOffLoop ?? false, threads: opts.checkThreads });
      phases.check = performance.now() - mark;
    } finally {
      await flushed;
    }
    mark = performance.now();
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

async function fsyncPathAsync(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
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
  schemaVersion?: number;
  /** Made by a development build before 0.1: whole, but no posd of today runs it. */
  development?: boolean;
}

/** Reads a database file without changing it: integrity, and whether this posd can run it. */
export function inspectDatabase(file: string): Inspection {
  return inspectWith(file, (db) => (db.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check));
}

/**
 * Below this size a copy is checked by one thread: the whole check takes less than starting a second
 * thread (tens of milliseconds on a loaded box).
 */
export const SPLIT_CHECK_MIN_BYTES = 16 * 1024 * 1024;

/**
 * How many threads a backup's integrity check may use: up to 4, always one core fewer than the box
 * has, left to the daemon's event loop and the rest of the box (a split check costs about half as
 * much CPU again as the whole one: bench/backup.ts). A 2-core box checks on one thread.
 */
export function checkThreads(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}

const quoteName = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * One `PRAGMA integrity_check` of `db` cut into at most `threads` groups of statements, each for a
 * connection of its own, side by side. Together they check exactly what the whole check does:
 * `quick_check` of the whole file walks every b-tree once with one map of the file's pages (each page
 * used once, none lost, the freelist, every record's format, types and NOT NULL), and
 * `integrity_check(<table>)` for every table adds what only the full check does for that table (each
 * row found in each of its indexes and each index entry in the table, UNIQUE, CHECK). A table's own
 * check cannot be split, so a file whose largest table is most of the work gains nothing from
 * threads and is checked whole, as is a file with a table that cannot be counted.
 *
 * The work of each statement is estimated from row counts (`count(*)` reads the smallest b-tree of a
 * table, a small part of checking it): a table's check costs its rows times one plus two per index
 * (each row is looked up in each index), the whole-file quick check 0.4 per row and b-tree; measured
 * in bench/backup.ts on a store-shaped file.
 */
export function planIntegrityCheck(db: Database.Database, threads: number): string[][] {
  const whole = [['integrity_check']];
  if (threads < 2) return whole;
  const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[];
  const indexes = new Map(
    (db.prepare("SELECT tbl_name AS name, count(*) AS n FROM sqlite_schema WHERE type = 'index' GROUP BY tbl_name").all() as Array<{ name: string; n: number }>).map(
      (r) => [r.name, r.n],
    ),
  );
  const jobs: Array<{ statement: string; work: number }> = [];
  let quick = 0;
  let full = 0;
  for (const table of tables) {
    let rows: number;
    try {
      rows = 1 + (db.prepare(`SELECT count(*) FROM ${quoteName(table)}`).pluck().get() as number);
    } catch {
      return whole; // a virtual table of a module this build lacks: the whole check says what it can
    }
    const k = indexes.get(table) ?? 0;
    const work = rows * (1 + 2 * k);
    jobs.push({ statement: `integrity_check(${quoteName(table)})`, work });
    quick += 0.4 * rows * (1 + k);
    full += work;
  }
  jobs.push({ statement: 'quick_check', work: quick });
  // Longest first, each to the least loaded group.
  jobs.sort((a, b) => b.work - a.work);
  const groups = Array.from({ length: threads }, () => ({ statements: [] as string[], work: 0 }));
  for (const job of jobs) {
    const least = groups.reduce((a, b) => (b.work < a.work ? b : a));
    least.statements.push(job.statement);
    least.work += job.work;
  }
  const used = groups.filter((g) => g.statements.length > 0);
  // Worth the threads only when the longest group is clearly shorter than the whole check.
  if (used.length < 2 || Math.max(...used.map((g) => g.work)) > 0.8 * full) return whole;
  return used.map((g) => g.statements);
}

/** Runs integrity statements on a read-only connection of this thread: every line of each. */
function runIntegrityStatements(file: string, mmapBytes: number, statements: string[]): string[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma(`mmap_size = ${mmapBytes}`);
    const lines: string[] = [];
    for (const statement of statements) for (const row of db.pragma(statement) as Array<Record<string, unknown>>) lines.push(String(Object.values(row)[0]));
    return lines;
  } finally {
    db.close();
  }
}

/**
 * The integrity check of a backup copy (no one else writes it), split over threads where it pays
 * (planIntegrityCheck): `['ok']`, or every line that is not ok.
 */
async function integrityLines(file: string, opts: { offLoop: boolean; threads?: number }): Promise<string[]> {
  const mmapBytes = checkMmapBytes(file);
  const threads = opts.threads ?? (statSync(file).size >= SPLIT_CHECK_MIN_BYTES ? checkThreads() : 1);
  let groups = [['integrity_check']];
  if (threads > 1) {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      groups = planIntegrityCheck(db, threads);
    } finally {
      db.close();
    }
  }
  const [first, ...rest] = groups;
  // The threads start before this one blocks on its own share.
  const running = rest.map((statements) => integrityCheckOffLoop(file, mmapBytes, statements));
  let own: string[] | Error = [];
  if (opts.offLoop) running.push(integrityCheckOffLoop(file, mmapBytes, first));
  else {
    try {
      own = runIntegrityStatements(file, mmapBytes, first);
    } catch (err) {
      own = err as Error;
    }
  }
  const settled = await Promise.allSettled(running);
  if (own instanceof Error) throw own;
  const lines = [...own];
  for (const r of settled) {
    if (r.status === 'rejected') throw r.reason;
    lines.push(...r.value);
  }
  const bad = lines.filter((line) => line !== 'ok');
  return bad.length > 0 ? bad : ['ok'];
}

/** `inspectDatabase` of a backup copy, its integrity check split over threads where it pays. */
export async function inspectBackupCopy(file: string, opts: { offLoop: boolean; threads?: number }): Promise<Inspection> {
  let lines: string[];
  try {
    lines = await integrityLines(file, opts);
  } catch (err) {
    return { ok: false, problem: `cannot check ${file}: ${(err as Error).message}` };
  }
  return inspectWith(file, () => lines);
}

function inspectWith(file: string, integrity: (db: Database.Database) => string[]): Inspection {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma(`mmap_size = ${checkMmapBytes(file)}`);
  } catch (err) {
    return { ok: false, problem: `cannot open ${file}: ${(err as Error).message}` };
  }
  try {
    const result = integrity(db);
    if (result.length !== 1 || result[0] !== 'ok') return { ok: false, problem: `integrity_check: ${result.slice(0, 3).join('; ')}` };
    const version = db.pragma('user_version', { simple: true }) as number;
    if (madeByDevelopmentBuild(db)) {
      return { ok: false, problem: `${basename(file)} was made by a development build of posd before 0.1, which this posd does not run`, schemaVersion: version, development: true };
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
