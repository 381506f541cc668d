import type pg from 'pg';
import type { Db } from '../../db/database.js';
import { logPosition, pendingEntries, type PendingEntry } from '../../db/change-capture.js';
import { ApiError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { appendEntries, entryIdsBetween } from '../pg/central-log.js';

/** Entries sent in one append at most (the batch grows with the queue up to this), and their changes' size. */
const APPEND_BATCH = 100;
const APPEND_CHARS = 4_000_000;
/** An acknowledgement waits this long at most for its entry's append (then 503; the entry may still land). */
const HOLD_TIMEOUT_MS = 5000;
/** After a failed append whose outcome is still unknown, the next look at the log. */
const RETRY_MS = 200;

/** What the appender and the connections' commit gates share (the projector's thread's too). */
export interface AppendShare {
  /** [0]: the last position the log holds of this leadership; [1]: 1 once fenced (another core leads). */
  figures: Float64Array;
}

export function newAppendShare(buffer = new SharedArrayBuffer(16)): AppendShare {
  return { figures: new Float64Array(buffer) };
}

interface Waiter {
  position: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * The leading core's group commit of the central's log (docs/central.md, "One log"): every
 * transaction commits to SQLite with its entry kept in the file (`queueEntry`), and this sends
 * every entry waiting in one multi-row insert, fenced by the epoch, one append in flight at a time
 * while the next transactions commit: the more wait, the more one round trip carries. Every
 * acknowledgement waits for its entry here (`hold`: an answer, a webhook, a report to PostgreSQL).
 * An append whose answer was lost is decided by the ids the log holds at its positions; one that
 * is fenced, or finds another core's entry there, ends this leadership's writes (`central_standby`):
 * the core steps down and undoes what the log does not hold (`reconcilePending`).
 */
export class LogAppender {
  private waiters: Waiter[] = [];
  private running: Promise<void> | undefined;
  private wanted = false;
  private stopped = false;
  private failure: ApiError | undefined;
  /** Entries appended and round trips made (the status page's and the bench's figures). */
  entries = 0;
  trips = 0;
  /** Time spent in appends (ms) and the changes' text they carried (characters). */
  tripMs = 0;
  chars = 0;

  constructor(
    private readonly db: Db,
    private readonly pool: pg.Pool,
    private readonly epoch: number,
    readonly share: AppendShare,
    private readonly log: Logger,
    private readonly fenced: () => void,
    private readonly observe: (ms: number) => void,
  ) {}

  get appended(): number {
    return this.share.figures[0];
  }

  /** Why writes are refused now (fenced), or undefined. */
  get failed(): ApiError | undefined {
    return this.failure;
  }

  /** A transaction committed an entry (or may have): the next append carries it. */
  ring(): void {
    this.wanted = true;
    // Fenced: nothing more is sent (nor rung again: a loop that ends at once would ring itself forever).
    if (this.running || this.stopped || this.failure) return;
    this.running = this.loop()
      .catch((err: unknown) => {
        // The file's list broke its order (never seen): no acknowledgement can be made sure of.
        this.log.error({ err }, 'sync: the appender cannot read the entries to append; this core refuses writes');
        this.fence('sync: the central log appender stopped');
      })
      .finally(() => {
        this.running = undefined;
        if (this.wanted && !this.stopped && !this.failure) this.ring();
      });
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
      this.ring();
    });
  }

  /** Ends this leadership's appends: waiters fail with `err` (the lease lost, or stopping). */
  async stop(err: ApiError = new ApiError('central_standby')): Promise<void> {
    this.stopped = true;
    await this.running;
    this.failAll(err);
  }

  private failAll(err: ApiError): void {
    this.failure ??= err;
    this.share.figures[1] = 1;
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  private settle(): void {
    const at = this.appended;
    if (!this.waiters.some((w) => w.position <= at)) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) (w.position <= at ? w.resolve : () => still.push(w))();
    this.waiters = still;
  }

  private async loop(): Promise<void> {
    while (this.wanted && !this.stopped && !this.failure) {
      this.wanted = false;
      for (;;) {
        if (this.stopped || this.failure) return;
        const read = pendingEntries(this.db, this.appended, APPEND_BATCH);
        if (!read.length) break;
        let chars = 0;
        const batch = read.filter((e, i) => (chars += e.changes.length) <= APPEND_CHARS || i === 0);
        if (batch[0].position !== this.appended + 1)
          throw new Error(`the file's first entry not appended is ${batch[0].position}, the log holds this leadership's to ${this.appended}`);
        await this.send(batch);
        if (batch.length < read.length || read.length === APPEND_BATCH) this.wanted = true;
      }
    }
  }

  /** One append of `batch`, its outcome made sure of (the log read again after a failure). */
  private async send(batch: PendingEntry[]): Promise<void> {
    const started = performance.now();
    let done = false;
    try {
      this.trips++;
      done = await appendEntries(this.pool, this.epoch, batch);
      if (!done) return this.fence('sync: another core moved the lease epoch: this core no longer leads and refuses writes');
    } catch (err) {
      this.log.warn({ err }, 'sync: an append to the central log failed; the log is read at its positions');
      for (;;) {
        if (this.stopped) return;
        try {
          const ids = await entryIdsBetween(this.pool, batch[0].position, batch[batch.length - 1].position);
          let n = 0;
          while (n < batch.length && ids.get(batch[n].position) === batch[n].id) n++;
          if (n < batch.length && ids.has(batch[n].position))
            return this.fence('sync: another core wrote the central log at a position this core had not appended yet: it steps down');
          // Its own entries through n are there (the answer lost); the rest go with the next append.
          if (n > 0) this.advance(batch[n - 1].position, n);
          break;
        } catch (readErr) {
          this.log.warn({ err: readErr }, 'sync: the central log is not readable; acknowledgements wait');
          await new Promise((r) => setTimeout(r, RETRY_MS));
        }
      }
      this.wanted = true;
      await new Promise((r) => setTimeout(r, RETRY_MS));
      return;
    }
    const ms = performance.now() - started;
    this.observe(ms);
    this.tripMs += ms;
    for (const e of batch) this.chars += e.changes.length;
    this.advance(batch[batch.length - 1].position, batch.length);
  }

  private advance(position: number, n: number): void {
    this.share.figures[0] = position;
    this.entries += n;
    this.settle();
  }

  private fence(message: string): void {
    this.log.error({ event: 'sync.core_fenced' }, message);
    this.failAll(new ApiError('central_standby', { message: 'This core no longer leads the central: writes go to the leading core.' }));
    this.fenced();
  }
}
