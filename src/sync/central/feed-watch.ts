import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';
import { feedBell } from '../../outbox/feed-changes.js';
import { centralSide } from './sync-store.js';

/** How often the watch asks SQLite whether another connection committed, while anyone waits. */
export const DATA_VERSION_TICK_MS = 250;

interface Waiter {
  /** The organizations whose feed rows this long-poll may return. */
  organizations: ReadonlySet<string>;
  /** The highest feed seq this long-poll has read up to (its answer's cursor so far). */
  seen: number;
  wake: () => void;
}

/**
 * What a waiting `GET /sync/feed` waits on: a feed row that committed. Rows written in this process
 * ring the feed's bell (`ringFeed`), which wakes the long-polls of that organization at once; rows
 * written by another connection (`posd keys revoke`, a thread) are noticed by one timer per process
 * that reads `PRAGMA data_version` (no table read) while anyone waits, and on a change reads the
 * feed's highest seq once, waking only the long-polls behind it. An idle long-poll therefore reads
 * the feed once, however long it waits; before, each one re-read it every 250 ms.
 */
export class FeedWatch {
  private readonly waiters = new Set<Waiter>();
  private readonly dataVersion;
  private version = -1;
  private timer: NodeJS.Timeout | undefined;
  /** Waiters that came since the last tick: what they read may predate the version the timer holds. */
  private fresh = false;
  /** Counted for tests and metrics: ticks of the timer and feed reads it made. */
  readonly stats = { ticks: 0, maxReads: 0 };

  constructor(private readonly db: Db) {
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    feedBell(db).on('rows', (orgs: Array<string | null>) => {
      for (const w of this.waiters) if (orgs.some((o) => o === null || w.organizations.has(o))) w.wake();
    });
  }

  /** How many long-polls wait now. */
  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * Resolves true when a feed row that may concern these organizations commits after the reader
   * saw `seen`, false when `timeoutMs` passes or `signal` aborts first.
   */
  wait(organizations: ReadonlySet<string>, seen: number, timeoutMs: number, signals: AbortSignal[]): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const done = (woken: boolean) => {
        if (!this.waiters.delete(waiter)) return;
        clearTimeout(timeout);
        for (const s of signals) s.removeEventListener('abort', aborted);
        if (this.waiters.size === 0) this.stop();
        resolve(woken);
      };
      const aborted = () => done(false);
      const waiter: Waiter = { organizations, seen, wake: () => done(true) };
      const timeout = setTimeout(() => done(false), Math.max(0, timeoutMs));
      timeout.unref();
      this.waiters.add(waiter);
      for (const s of signals) s.addEventListener('abort', aborted, { once: true });
      if (signals.some((s) => s.aborted)) return done(false);
      this.fresh = true;
      this.start();
    });
  }

  private start(): void {
    if (this.timer) return;
    this.version = this.dataVersion.get() as number;
    this.timer = setInterval(() => this.tick(), DATA_VERSION_TICK_MS);
    this.timer.unref();
  }

  private stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    this.stats.ticks++;
    let version: number;
    try {
      version = this.dataVersion.get() as number;
    } catch {
      // The database is being closed under a stopping daemon: the long-polls answer on their own.
      return this.stop();
    }
    if (version === this.version && !this.fresh) return;
    this.version = version;
    this.fresh = false;
    this.stats.maxReads++;
    const max = centralSide(this.db).feedMax();
    for (const w of this.waiters) if (w.seen < max) w.wake();
  }
}

/** One watch (one timer) per database connection, so per process at a central. */
export const feedWatch = perDb((db) => new FeedWatch(db));
