import { close, fdatasync, open } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Db } from './database.js';
import { perDb } from './per-db.js';
import { logHeld } from './log-hold.js';

/** Flushes a file to the disk, off the event loop; calls back once it is there (or failed). */
export type SyncFile = (file: string, done: (error: Error | null) => void) => void;

/** How often a kept descriptor checks that its database is still open (and closes once it is not). */
const DESCRIPTOR_CHECK_MS = 1000;

/** libuv's thread pool: the size set before it started (src/posd.ts sets eight), four by default. */
const POOL_THREADS = Number(process.env.UV_THREADPOOL_SIZE) || 4;
/** Flushes of one WAL that may run at once: the pool's threads less two for other work, at most six. */
export const FLUSHES_AT_ONCE = Math.min(6, Math.max(1, POOL_THREADS - 2));

/**
 * `fdatasync` of the file in libuv's thread pool, on descriptors opened at the first flush and
 * kept while `alive()` says the database is open (checked every second once opened; the timer
 * never holds the process). One trip to the thread pool a flush: opening and closing the file each
 * time made three, and each waited for the event loop between them, so under load a 5 ms flush
 * began and was answered milliseconds late (decision 0275).
 *
 * `descriptors` flushes may run at once, each on a descriptor of its own, all opened together
 * (decision 0298): a write-back error is reported once to each open file description, so two
 * flushes sharing one could each take the other's error for its own success, and one opened later
 * would not hear of an error from before it opened. Kept open, the set hears of every write-back
 * error since the first flush. A flush that fails closes the whole set, and the next opens it again.
 */
export function syncFileOffLoop(alive: () => boolean = () => true, descriptors = 1): SyncFile {
  /** The set's descriptors not flushing now; null while none is open. */
  let idle: number[] | null = null;
  /** Bumped when the set is dropped: a descriptor of an older set is closed when its flush ends. */
  let generation = 0;
  let busy = 0;
  let opening = false;
  /** Flushes asked while the set opens, or while every descriptor flushes. */
  const queued: Array<() => void> = [];
  let check: NodeJS.Timeout | null = null;
  const drop = () => {
    generation++;
    for (const fd of idle ?? []) close(fd, () => {});
    idle = null;
  };
  const checkAlive = () => {
    if (busy || opening || alive()) return;
    clearInterval(check!);
    check = null;
    drop();
  };
  const next = () => {
    const go = queued.shift();
    if (go) go();
  };
  const flush = (fd: number, done: (error: Error | null) => void) => {
    busy++;
    const of = generation;
    fdatasync(fd, (error) => {
      busy--;
      if (of !== generation) close(fd, () => {});
      else if (error) {
        close(fd, () => {});
        drop();
      } else {
        idle!.push(fd);
        check ??= setInterval(checkAlive, DESCRIPTOR_CHECK_MS).unref();
      }
      done(error);
      next();
    });
  };
  const openSet = (file: string, done: (error: Error | null) => void) => {
    opening = true;
    const opened: number[] = [];
    let left = descriptors;
    let failed: Error | null = null;
    for (let i = 0; i < descriptors; i++) {
      open(file, 'r', (error, fd) => {
        if (error) failed ??= error;
        else opened.push(fd);
        if (--left > 0) return;
        opening = false;
        if (failed) {
          for (const o of opened) close(o, () => {});
          done(failed);
          // Those that queued behind the open try again.
          return next();
        }
        idle = opened;
        flush(idle.pop()!, done);
        while (idle.length && queued.length) next();
      });
    }
  };
  const sync: SyncFile = (file, done) => {
    if (idle?.length) return flush(idle.pop()!, done);
    if (idle || opening) {
      queued.push(() => sync(file, done));
      return;
    }
    openSet(file, done);
  };
  return sync;
}

/** A flush shorter than this is a fast disk: the next one starts at once, nothing is gathered. */
const GATHER_FROM_MS = 2;
/** The longest the next flush waits for the writers just answered, as a share of the last flush. */
const GATHER_SHARE = 0.5;
const GATHER_MAX_MS = 10;
/**
 * A flush that started while another ran and took this many times that one's duration says the
 * disk ran them one after the other; after SERIAL_SIGNS such flushes in a row, flushes go one at a
 * time for SERIAL_FOR_MS, then overlap again. Six, not three: flush times that merely vary (a
 * loaded box, a disk's own jitter) gave three in a row about once every few seconds, each costing
 * a second of one flush at a time; a disk that does serialise them shows the sign on every
 * overlapped flush, so six take it only a few flushes longer to find (decision 0306).
 */
const SERIAL_FACTOR = 1.5;
const SERIAL_SIGNS = 6;
const SERIAL_FOR_MS = 1000;

interface Flight {
  waiters: Array<(error: Error | null) => void>;
  commits: number;
  startedAt: number;
  /** Once ended: its duration and outcome (it is answered once every older flight is). */
  tookMs: number | null;
  error: Error | null;
  /** The newest flight running when this one started, if any. */
  beside: Flight | null;
}

/**
 * The flush that makes a group commit durable, off the event loop (issue 38). A batch commits
 * with `synchronous=NORMAL` (SQLite appends its frames to the WAL without flushing), then waits here
 * for an `fdatasync` of the WAL that started after its commit. The loop keeps answering reads and
 * filling the next batch meanwhile. Waiters are answered in the order they came: a flight (one
 * flush and its waiters) is answered once it has ended and every flight started before it has been,
 * or, sooner, once a flight started after it has ended well (that flush covered its commits too).
 *
 * Slow disk, flushes side by side (decision 0298): with one flush at a time a writer answered when
 * a flush ends is carried by the next only if the loop ran its next request before that one
 * started, so 20 writers at 5 ms reach at most 20 / (5 ms + 20 requests' CPU), about 2,400/s for
 * the cheapest write. So after a flush of 2 ms or more, up to `maxInFlight` flushes run at once,
 * each starting at least the last flush's duration / `maxInFlight` after the one before (or at once
 * for a `flushNow`): each carries the commits made since the one before it, and a writer waits for
 * its own flush and a share of the next start. A disk that runs concurrent flushes one after the
 * other (its cache flushes serialised) would make each wait for those before it: when flushes
 * started beside another take half as long again as it, six times in a row, flushes go one at a
 * time for a second, then overlap again.
 *
 * One at a time (a fast disk, or one found serial), gathering (decision 0273): the writers a slow
 * flush just answered send their next writes within a turn or two of the loop. Started at the
 * first commit after it, the next flush would carry a few of them and the rest would wait for the
 * one after. So after a flush of 2 ms or more, the next starts once the commits waiting then plus
 * as many as it answered have arrived, or half its duration (at most 10 ms) later, whichever comes
 * first. A flush that carried one commit (a lone writer, a terminal's result) and one under 2 ms
 * (a fast disk) never make the next wait.
 */
export class WalFlusher {
  /** Committed since the last flush started: the next flush must run for them. */
  private dirty = false;
  private waiting: Array<(error: Error | null) => void> = [];
  /** Flights not yet answered, oldest first; `running` of them have not ended. */
  private flights: Flight[] = [];
  private running = 0;
  /** Commits (jobs of a group commit) waiting for the next flush. */
  private waitingCommits = 0;
  /** While gathering: how many commits the next flush waits for, and the timer that ends the wait. */
  private gatherUntil = 0;
  private gatherTimer: NodeJS.Timeout | null = null;
  /** When the last flush started, how long the last one that ended took, and the wait to the next start. */
  private lastStart = 0;
  private lastTookMs = 0;
  private spacingTimer: NodeJS.Timeout | null = null;
  /** Overlapped flushes in a row that took half as long again as the one beside; until when flushes go alone. */
  private serialSigns = 0;
  private aloneUntil = 0;

  constructor(
    readonly file: string,
    private readonly sync: SyncFile = syncFileOffLoop(),
    private readonly now: () => number = performance.now.bind(performance),
    private readonly maxInFlight = 1,
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
    if (!this.dirty && this.flights.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = (error: Error | null) => (error ? reject(error) : resolve());
      if (this.dirty) {
        this.waiting.push(waiter);
        this.start();
        // The newest flight started after every commit so far, and is answered after all older ones.
      } else this.flights[this.flights.length - 1].waiters.push(waiter);
    });
  }

  /** A commit waiting for the next flush asked it not to gather (`flushNow`). */
  private urgent = false;

  /**
   * The commits waiting now go in the next flush without a gathering wait (ended if one runs, not
   * begun when the running flush ends) or a spacing one: a commit someone waits on alone (a
   * terminal's charge, decision 0291) must not wait half a flush for writers that may not come.
   */
  flushNow(): void {
    if (this.waiting.length === 0) return;
    this.urgent = true;
    if (this.gatherTimer) this.endGather();
    else this.start();
  }

  private endGather(): void {
    clearTimeout(this.gatherTimer!);
    this.gatherTimer = null;
    this.start();
  }

  /** Whether a flush may start beside those running: a slow disk not found serial. */
  private overlapping(): boolean {
    if (this.maxInFlight < 2 || this.lastTookMs < GATHER_FROM_MS) return false;
    return this.aloneUntil === 0 || this.now() >= this.aloneUntil;
  }

  private start(): void {
    if (this.gatherTimer || this.waiting.length === 0) return;
    if (this.running > 0) {
      if (this.running >= this.maxInFlight || !this.overlapping()) return;
      const wait = this.lastStart + this.lastTookMs / this.maxInFlight - this.now();
      if (wait > 0 && !this.urgent) {
        this.spacingTimer ??= setTimeout(() => {
          this.spacingTimer = null;
          this.start();
        }, wait);
        return;
      }
    }
    if (this.spacingTimer) {
      clearTimeout(this.spacingTimer);
      this.spacingTimer = null;
    }
    const flight: Flight = {
      waiters: this.waiting.splice(0),
      commits: this.waitingCommits,
      startedAt: this.now(),
      tookMs: null,
      error: null,
      beside: this.running > 0 ? this.flights[this.flights.length - 1] : null,
    };
    this.flights.push(flight);
    this.running++;
    this.lastStart = flight.startedAt;
    this.urgent = false;
    this.waitingCommits = 0;
    this.dirty = false;
    this.sync(this.file, (error) => this.ended(flight, error));
  }

  private ended(flight: Flight, error: Error | null): void {
    flight.tookMs = this.now() - flight.startedAt;
    flight.error = error;
    this.running--;
    // Not on disk: the next caller flushes again rather than take it for done.
    if (error) this.dirty = true;
    else this.lastTookMs = flight.tookMs;
    const beside = flight.beside;
    if (beside?.tookMs != null && !error) {
      if (flight.tookMs < SERIAL_FACTOR * beside.tookMs) this.serialSigns = 0;
      else if (++this.serialSigns >= SERIAL_SIGNS) {
        this.serialSigns = 0;
        this.aloneUntil = this.now() + SERIAL_FOR_MS;
      }
    }
    let answered = 0;
    let failed = false;
    // A flush that ended well covered every commit made before it started, those of the flights
    // started before it included: they are answered with it, whether their own flush has ended or
    // not (decision 0306). One that failed answers in turn, once every older flight has.
    const upTo = error ? 0 : this.flights.indexOf(flight) + 1;
    for (let i = 0; this.flights.length && (i < upTo || this.flights[0].tookMs !== null); i++) {
      const done = this.flights.shift()!;
      answered += done.commits;
      failed ||= done.error !== null;
      for (const waiter of done.waiters.splice(0)) waiter(done.error);
    }
    const tookMs = flight.tookMs;
    if (this.running === 0 && !failed && !this.urgent && tookMs >= GATHER_FROM_MS && answered > 1 && !this.overlapping()) {
      // The next flush carries what waits now and the next writes of the writers just answered
      // (above), or what came by half a flush from now.
      this.gatherUntil = this.waitingCommits + answered;
      this.gatherTimer = setTimeout(() => this.endGather(), Math.min(GATHER_MAX_MS, tookMs * GATHER_SHARE));
      return;
    }
    this.start();
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
    syncFileOffLoop(() => db.open, FLUSHES_AT_ONCE),
    undefined,
    FLUSHES_AT_ONCE,
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
