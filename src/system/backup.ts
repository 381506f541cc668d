import Database from 'better-sqlite3';
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Config } from '../config.js';
import { DIR_MODE, ownerOnlyFiles } from './file-modes.js';
import { latestVersion, madeByDevelopmentBuild } from '../db/migrate.js';
import { writeBundle } from './backup-bundle.js';

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
 * Copies the database at `source` to `dest` with SQLite's online backup API while the daemon keeps
 * writing. The copy is one consistent snapshot: a read transaction is held on the source connection
 * for the whole copy, so the WAL keeps the snapshot and writers in other connections (the daemon)
 * never restart the backup and are never blocked by it. Every row committed before the call is in
 * the copy. Written to `dest.partial`, checked with `PRAGMA integrity_check`, flushed, then renamed:
 * `dest` is either a whole, checked backup or absent.
 */
export async function backupDatabase(
  source: string,
  dest: string,
  opts: { onProgress?: (p: BackupProgress) => void; busyTimeoutMs?: number; /** What the backup carries besides the database (backup-bundle.ts). */ bundle?: Record<string, string> } = {},
): Promise<BackupResult> {
  // A backup is the whole store's data: owner-only, also under `posd backup --to FILE`.
  mkdirSync(dirname(dest), { recursive: true, mode: DIR_MODE });
  const partial = `${dest}.partial`;
  rmSync(partial, { force: true });
  const db = new Database(source, { fileMustExist: true });
  try {
    db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
    db.exec('BEGIN');
    db.prepare('SELECT count(*) FROM sqlite_master').get(); // takes the snapshot now
    await db.backup(partial, {
      progress: (p) => {
        opts.onProgress?.(p);
        // ~1% of the file per step keeps the event loop responsive and the progress bar moving.
        return Math.max(64, Math.ceil(p.totalPages / 100));
      },
    });
    db.exec('COMMIT');
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  } finally {
    db.close();
  }
  // The copy keeps the source's WAL mode in its header; a backup should be one self-contained file
  // that opens without leaving -wal/-shm files beside it.
  const copy = new Database(partial);
  try {
    copy.pragma('journal_mode = DELETE');
  } finally {
    copy.close();
  }
  try {
    if (opts.bundle) writeBundle(partial, opts.bundle);
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  }
  const check = inspectDatabase(partial);
  if (!check.ok) {
    rmSync(partial, { force: true });
    throw new Error(`the backup failed its integrity check: ${check.problem}`);
  }
  ownerOnlyFiles(partial);
  fsyncPath(partial);
  renameSync(partial, dest);
  fsyncPath(dirname(dest));
  return { file: dest, bytes: statSync(dest).size };
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
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    return { ok: false, problem: `cannot open ${file}: ${(err as Error).message}` };
  }
  try {
    const rows = db.pragma('integrity_check') as Array<{ integrity_check: string }>;
    const result = rows.map((r) => r.integrity_check);
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
