import { close, fdatasync, open } from 'node:fs';
import type { Db } from './database.js';
import { perDb } from './per-db.js';

/** Flushes a file to the disk, off the event loop; calls back once it is there (or failed). */
export type SyncFile = (file: string, done: (error: Error | null) => void) => void;

/** `fdatasync` of the file in libuv's thread pool (open, flush, close: no descriptor outlives it). */
export const syncFileOffLoop: SyncFile = (file, done) => {
  open(file, 'r', (openError, fd) => {
    if (openError) return done(openError);
    fdatasync(fd, (syncError) => close(fd, () => done(syncError)));
  });
};

/**
 * The flush that makes a group commit durable, off the event loop (issue 38). A batch commits
 * with `synchronous=NORMAL` (SQLite appends its frames to the WAL without flushing), then waits here
 * for an `fdatasync` of the WAL that started after its commit. One flush at a time: batches that
 * commit while one runs wait for the next, which covers them all, so the slower the disk, the more
 * commits one flush carries, and the loop keeps answering reads and filling the next batch
 * meanwhile. Waiters are answered in the order they came.
 */
export class WalFlusher {
  /** Committed since the last flush started: the next flush must run for them. */
  private dirty = false;
  private waiting: Array<(error: Error | null) => void> = [];
  private inFlight: Array<(error: Error | null) => void> | null = null;

  constructor(
    readonly file: string,
    private readonly sync: SyncFile = syncFileOffLoop,
  ) {}

  /** After a commit made without a flush: resolves once a flush that started after it has ended. */
  committed(): Promise<void> {
    this.dirty = true;
    return this.whenDurable();
  }

  /** Resolves once everything committed so far is on disk (at once when nothing waits for a flush). */
  whenDurable(): Promise<void> {
    if (!this.dirty && !this.inFlight) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = (error: Error | null) => (error ? reject(error) : resolve());
      if (this.dirty) {
        this.waiting.push(waiter);
        this.start();
      } else this.inFlight!.push(waiter);
    });
  }

  private start(): void {
    if (this.inFlight || this.waiting.length === 0) return;
    const group = this.waiting.splice(0);
    this.inFlight = group;
    this.dirty = false;
    this.sync(this.file, (error) => {
      this.inFlight = null;
      // Not on disk: the next caller flushes again rather than take it for done.
      if (error) this.dirty = true;
      for (const waiter of group) waiter(error);
      this.start();
    });
  }
}

/**
 * The database's flusher when its commits may be flushed off the loop: a file in WAL mode whose
 * `synchronous` is FULL or EXTRA (undefined otherwise: in memory, NORMAL or OFF promise no flush,
 * and a rollback journal has no WAL to flush).
 */
export const walFlusherOf = perDb((db: Db): WalFlusher | null => {
  if (db.memory || db.readonly) return null;
  if (db.pragma('journal_mode', { simple: true }) !== 'wal') return null;
  if ((db.pragma('synchronous', { simple: true }) as number) < 2) return null;
  return new WalFlusher(`${db.name}-wal`);
});

/**
 * Resolves once every commit made so far on `db` is on disk. For what leaves the box (a push to the
 * central, a webhook, a frame to a terminal, a mail): nothing goes out that a power cut could still
 * take back.
 */
export function whenDurable(db: Db): Promise<void> {
  return walFlusherOf(db)?.whenDurable() ?? Promise.resolve();
}
