import { close, fdatasync, open } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Db } from './database.js';
import { perDb } from './per-db.js';
import { logHeld } from './log-hold.js';

/** Flushes a file to the disk, off the event loop; calls back once it is there (or failed). */
export type SyncFile = (file: string, done: (error: Error | null) => void) => void;

/** How often a kept descriptor checks that its database is still open (and closes once it is not). */
const DESCRIPTOR_CHECK_MS = 1000;

/**
 * `fdatasync` of the file in libuv's thread pool, on a descriptor opened at the first flush and
 * kept while `alive()` says the database is open (checked every second once opened; the timer
 * never holds the process). One trip to the thread pool a flush: opening and closing the file each
 * time made three, and each waited for the event loop between them, so under load a 5 ms flush
 * began and was answered milliseconds late (decision 0275). Kept open, the descriptor also hears of
 * every write-back error since the first flush; one opened afresh hears only of later ones. A flush
 * that fails closes it, and the next opens the file again.
 */
export function syncFileOffLoop(alive: () => boolean = () => true): SyncFile {
  let fd: number | null = null;
  let busy = false;
  let check: NodeJS.Timeout | null = null;
  const drop = () => {
    if (fd === null) return;
    close(fd, () => {});
    fd = null;
  };
  const checkAlive = () => {
    if (busy || alive()) return;
    clearInterval(check!);
    check = null;
    drop();
  };
  const flush = (done: (error: Error | null) => void) => {
    busy = true;
    fdatasync(fd!, (error) => {
      busy = false;
      if (error) drop();
      else check ??= setInterval(checkAlive, DESCRIPTOR_CHECK_MS).unref();
      done(error);
    });
  };
  return (file, done) => {
    if (fd !== null) return flush(done);
    busy = true;
    open(file, 'r', (error, opened) => {
      busy = false;
      if (error) return done(error);
      // Two flushes asked at once before the first opened (not a WalFlusher's way): one is kept.
      if (fd === null) fd = opened;
      else close(opened, () => {});
      flush(done);
    });
  };
}

/** A flush shorter than this is a fast disk: the next one starts at once, nothing is gathered. */
const GATHER_FROM_MS = 2;
/** The longest the next flush waits for the writers just answered, as a share of the last flush. */
const GATHER_SHARE = 0.5;
const GATHER_MAX_MS = 10;

/**
 * The flush that makes a group commit durable, off the event loop (issue 38). A batch commits
 * with `synchronous=NORMAL` (SQLite appends its frames to the WAL without flushing), then waits here
 * for an `fdatasync` of the WAL that started after its commit. One flush at a time: batches that
 * commit while one runs wait for the next, which covers them all, so the slower the disk, the more
 * commits one flush carries, and the loop keeps answering reads and filling the next batch
 * meanwhile. Waiters are answered in the order they came.
 *
 * Gathering (decision 0273): the writers a slow flush just answered send their next writes within a
 * turn or two of the loop. Started at the first commit after it (or at once for the commits made
 * during it), the next flush would carry a few of them and the rest would wait for the one after:
 * the writers settle into cohorts taking turns, each write waiting about two flushes (20 writers
 * at 5 ms: about 10 commits a flush, 2,000/s at most). So after a flush of 2 ms or more, the next
 * starts once the commits waiting then plus as many as it answered have arrived, or half its
 * duration (at most 10 ms) later, whichever comes first. A flush that carried one commit (a lone
 * writer, a terminal's result) and one under 2 ms (a fast disk) never make the next wait.
 */
export class WalFlusher {
  /** Committed since the last flush started: the next flush must run for them. */
  private dirty = false;
  private waiting: Array<(error: Error | null) => void> = [];
  private inFlight: Array<(error: Error | null) => void> | null = null;
  /** Commits (jobs of a group commit) waiting for the next flush, and those the running one carries. */
  private waitingCommits = 0;
  private inFlightCommits = 0;
  /** While gathering: how many commits the next flush waits for, and the timer that ends the wait. */
  private gatherUntil = 0;
  private gatherTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly file: string,
    private readonly sync: SyncFile = syncFileOffLoop(),
    private readonly now: () => number = performance.now.bind(performance),
  ) {}

  /**
   * After a commit made without a flush (of `commits` writes: a group commit's jobs): resolves once
   * a flush that started after it has ended.
   */
  committed(commits = 1): Promise<void> {
    this.dirty = true;
    this.waitingCommits += commits;
    const durable = this.whenDurable();
    if (this.gatherTimer && this.waitingCommits >= this.gatherUntil) this.endGather();
    return durable;
  }

  /**
   * After a commit made without a flush that nothing waits for yet (`groupCommitUnflushed`): the
   * next flush covers it, and none starts for it alone.
   */
  uncovered(): void {
    this.dirty = true;
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

  /** A commit waiting for the next flush asked it not to gather (`flushNow`). */
  private urgent = false;

  /**
   * The commits waiting now go in the next flush without a gathering wait (ended if one runs, not
   * begun when the running flush ends): a commit someone waits on alone (a terminal's charge,
   * decision 0291) must not wait half a flush for writers that may not come.
   */
  flushNow(): void {
    if (this.waiting.length === 0) return;
    this.urgent = true;
    if (this.gatherTimer) this.endGather();
  }

  private endGather(): void {
    clearTimeout(this.gatherTimer!);
    this.gatherTimer = null;
    this.start();
  }

  private start(): void {
    if (this.inFlight || this.gatherTimer || this.waiting.length === 0) return;
    const group = this.waiting.splice(0);
    this.inFlight = group;
    this.urgent = false;
    this.inFlightCommits = this.waitingCommits;
    this.waitingCommits = 0;
    this.dirty = false;
    const startedAt = this.now();
    this.sync(this.file, (error) => {
      const tookMs = this.now() - startedAt;
      const answered = this.inFlightCommits;
      this.inFlight = null;
      // Not on disk: the next caller flushes again rather than take it for done.
      if (error) this.dirty = true;
      for (const waiter of group) waiter(error);
      if (!error && !this.urgent && tookMs >= GATHER_FROM_MS && answered > 1) {
        // The next flush carries what waits now and the next writes of the writers just answered
        // (above), or what came by half a flush from now.
        this.gatherUntil = this.waitingCommits + answered;
        this.gatherTimer = setTimeout(() => this.endGather(), Math.min(GATHER_MAX_MS, tookMs * GATHER_SHARE));
        return;
      }
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
  return new WalFlusher(
    `${db.name}-wal`,
    syncFileOffLoop(() => db.open),
  );
});

/**
 * Resolves once every commit made so far on `db` is on disk (and, on a chain's leading core, in
 * the central's log: src/db/log-hold.ts). For what leaves the box (a push to the
 * central, a webhook, a frame to a terminal, a mail): nothing goes out that a power cut could still
 * take back.
 */
export function whenDurable(db: Db): Promise<void> {
  // On a chain's leading core, also in the central's log (src/db/log-hold.ts).
  const held = logHeld(db);
  const flushed = walFlusherOf(db)?.whenDurable();
  if (!held) return flushed ?? Promise.resolve();
  return flushed ? Promise.all([flushed, held]).then(() => undefined) : held;
}
