import type { Db } from './database.js';

/**
 * A full disk is a state the box lives through, not a crash (issue 37): SQLite answers
 * `SQLITE_FULL` (or the file system `ENOSPC`) and rolls the write back; nothing is acknowledged,
 * and the next write after space returns simply succeeds. This file keeps, per database, since when
 * writes have been refused, so the API answers `disk_full`, the page and doctor say so, and the log
 * gets one line when it starts and one when it ends instead of one per refused sale.
 */
export function isDiskFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return code === 'SQLITE_FULL' || code === 'ENOSPC';
}

export interface DiskFullState {
  /** When the first write was refused (ms since the epoch). */
  since: number;
  /** Writes refused since then. */
  refused: number;
}

type Watcher = (state: DiskFullState | null, previous: DiskFullState | null) => void;

const states = new WeakMap<Db, DiskFullState>();
const watchers = new WeakMap<Db, Watcher[]>();

/** Since when this database's writes are refused for want of space (null: they are not). */
export function diskFullState(db: Db): DiskFullState | null {
  return states.get(db) ?? null;
}

/** After a write: a full-disk failure starts (or extends) the state, a success ends it. */
export function noteWrite(db: Db, error?: unknown): void {
  const current = states.get(db) ?? null;
  if (error !== undefined) {
    if (!isDiskFull(error)) return;
    if (current) current.refused++;
    else change(db, { since: Date.now(), refused: 1 }, null);
    return;
  }
  if (current) change(db, null, current);
}

function change(db: Db, next: DiskFullState | null, previous: DiskFullState | null): void {
  if (next) states.set(db, next);
  else states.delete(db);
  for (const w of watchers.get(db) ?? []) w(next, previous);
}

/** Called on each change: the daemon logs the start and the end of a full disk. */
export function watchDiskFull(db: Db, fn: Watcher): void {
  watchers.set(db, [...(watchers.get(db) ?? []), fn]);
}
