import type pg from 'pg';
import type { Db } from '../../db/database.js';
import { logPosition } from '../../db/change-capture.js';
import { ApiError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { AppendLoop, type AppendHooks, type AppendShare } from './append-loop.js';

export { newAppendShare, type AppendShare } from './append-loop.js';

/** An acknowledgement waits this long at most for its entry's append (then 503; the entry may still land). */
const HOLD_TIMEOUT_MS = 5000;

interface Waiter {
  position: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** What sends the entries: the loop itself on this event loop, or the appender's thread (src/sync/central/log-appender-host.ts). */
export interface AppendSender {
  ring(): void;
  /** No further append; resolves once the one in flight ended (and the shared figure says what the log holds). */
  stop(): Promise<void>;
}

/**
 * The leading core's group commit of the central's log (docs/central.md, "One log"): every
 * transaction commits to SQLite with its entry kept in the file (`queueEntry`), and the sending
 * loop (src/sync/central/append-loop.ts) sends every entry waiting in one multi-row insert, fenced
 * by the epoch, one append in flight at a time while the next transactions commit: the more wait,
 * the more one round trip carries. Every acknowledgement waits for its entry here (`hold`: an
 * answer, a webhook, a report to PostgreSQL). One that is fenced, or finds another core's entry at
 * its position, ends this leadership's writes (`central_standby`): the core steps down and undoes
 * what the log does not hold (`reconcilePending`). The loop runs on the daemon's event loop, or,
 * given `sender`, on a thread of its own.
 */
export class LogAppender {
  private waiters: Waiter[] = [];
  private stopped = false;
  private failure: ApiError | undefined;
  private readonly sender: AppendSender;
  /** Entries appended and round trips made (the status page's and the bench's figures). */
  entries = 0;
  trips = 0;
  /** Time spent in appends (ms) and the changes' text they carried (characters). */
  tripMs = 0;
  chars = 0;

  constructor(
    private readonly db: Db,
    pool: pg.Pool,
    epoch: number,
    readonly share: AppendShare,
    private readonly log: Logger,
    private readonly fenced: () => void,
    private readonly observe: (ms: number) => void,
    sender?: (hooks: AppendHooks) => AppendSender,
  ) {
    const hooks: AppendHooks = {
      advanced: (position, n, ms, chars) => this.advanced(position, n, ms, chars),
      fence: (message) => this.fence(message),
    };
    this.sender = sender ? sender(hooks) : new AppendLoop(db, pool, epoch, share, log, hooks);
  }

  get appended(): number {
    return this.share.figures[0];
  }

  /** Why writes are refused now (fenced), or undefined. */
  get failed(): ApiError | undefined {
    return this.failure;
  }

  /** A transaction committed an entry (or may have): the next append carries it. */
  ring(): void {
    if (this.stopped || this.failure) return;
    this.sender.ring();
  }

  /** The log hold of this leadership (src/db/log-hold.ts): the file's position now, appended. */
  hold(): Promise<void> | undefined {
    const position = logPosition(this.db);
    if (position <= this.appended) return undefined;
    return this.whenAppended(position);
  }

  whenAppended(position: number): Promise<void> {
    if (position <= this.appended) return Promise.resolve();
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        this.markWaited();
        reject(new ApiError('central_log_unavailable'));
      }, HOLD_TIMEOUT_MS);
      const waiter: Waiter = {
        position,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      this.waiters.push(waiter);
      this.markWaited();
      this.ring();
    });
  }

  /** Ends this leadership's appends: waiters fail with `err` (the lease lost, or stopping). */
  async stop(err: ApiError = new ApiError('central_standby')): Promise<void> {
    this.stopped = true;
    await this.sender.stop();
    // What the last append made sure of is answered; the rest fail.
    this.settle();
    this.failAll(err);
  }

  private failAll(err: ApiError): void {
    this.failure ??= err;
    this.share.figures[1] = 1;
    this.share.figures[2] = 0;
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  private settle(): void {
    const at = this.appended;
    if (!this.waiters.some((w) => w.position <= at)) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) (w.position <= at ? w.resolve : () => still.push(w))();
    this.waiters = still;
    this.markWaited();
  }

  /** The last position an acknowledgement waits for, for the sending loop: its append ends there. */
  private markWaited(): void {
    let last = 0;
    for (const w of this.waiters) if (w.position > last) last = w.position;
    this.share.figures[2] = last;
  }

  private advanced(_position: number, n: number, ms: number, chars: number): void {
    this.entries += n;
    if (ms > 0) {
      this.trips++;
      this.observe(ms);
      this.tripMs += ms;
      this.chars += chars;
    }
    this.settle();
  }

  private fence(message: string): void {
    if (this.failure) return;
    this.log.error({ event: 'sync.core_fenced' }, message);
    this.failAll(new ApiError('central_standby', { message: 'This core no longer leads the central: writes go to the leading core.' }));
    this.fenced();
  }
}
