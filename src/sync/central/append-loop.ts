import type pg from 'pg';
import type { Db } from '../../db/database.js';
import { pendingEntries, type PendingEntry } from '../../db/change-capture.js';
import type { Logger } from '../../logger.js';
import { appendEntries, entryIdsBetween } from '../pg/central-log.js';

/** Entries sent in one append at most (the batch grows with the queue up to this), and their changes' size. */
const APPEND_BATCH = 100;
const APPEND_CHARS = 4_000_000;
/** After a failed append whose outcome is still unknown, the next look at the log. */
const RETRY_MS = 200;

/** What the appender and the connections' commit gates share (the projector's thread's too). */
export interface AppendShare {
  /**
   * [0]: the last position the log holds of this leadership; [1]: 1 once fenced (another core leads);
   * [2]: the last position an acknowledgement waits for (0: none waits), where an append ends.
   */
  figures: Float64Array;
  /**
   * [0]: moved by every commit that queued an entry; [1]: 1 while the appender's thread sleeps on
   * [0] (only then is it woken: a notify costs a message to the other thread).
   */
  rings: Int32Array;
}

export function newAppendShare(buffer = new SharedArrayBuffer(32)): AppendShare {
  return { figures: new Float64Array(buffer, 0, 3), rings: new Int32Array(buffer, 24, 2) };
}

/** Tells the appender's thread, if it sleeps, that an entry was queued (from any thread). */
export function ringAppender(share: AppendShare): void {
  Atomics.add(share.rings, 0, 1);
  if (Atomics.load(share.rings, 1) === 1) Atomics.notify(share.rings, 0);
}

/** What the sending loop tells the appender (on its loop, or by message from its thread). */
export interface AppendHooks {
  /** The log holds this leadership's entries through `position` now (`n` more; `ms` and `chars` of the append, 0 when found by reading the log). */
  advanced(position: number, n: number, ms: number, chars: number): void;
  /** Fenced, or the file's list broke its order: no further append, no further write. */
  fence(message: string): void;
}

/**
 * The sending half of the central log's group commit (src/sync/central/log-appender.ts): every
 * entry the file holds past what the log holds goes in one multi-row insert, fenced by the epoch,
 * one append in flight at a time, while the next transactions commit. Runs on the daemon's loop, or
 * on the appender's own thread with its own connections (src/sync/central/log-appender-thread.ts),
 * where neither its reads of the file nor the driver's writes of the entries take the loop that
 * answers `/api`. An append whose answer was lost is decided by the ids the log holds at its
 * positions.
 */
export class AppendLoop {
  private running: Promise<void> | undefined;
  private wanted = false;
  private stopped = false;
  private ended = false;

  constructor(
    private readonly db: Db,
    private readonly pool: pg.Pool,
    private readonly epoch: number,
    private readonly share: AppendShare,
    private readonly log: Logger,
    private readonly hooks: AppendHooks,
  ) {}

  private get appended(): number {
    return this.share.figures[0];
  }

  /** A transaction committed an entry (or may have): the next append carries it. */
  ring(): void {
    this.wanted = true;
    // Fenced: nothing more is sent (nor rung again: a loop that ends at once would ring itself forever).
    if (this.running || this.stopped || this.ended) return;
    this.running = this.loop()
      .catch((err: unknown) => {
        // The file's list broke its order (never seen): no acknowledgement can be made sure of.
        this.log.error({ err }, 'sync: the appender cannot read the entries to append; this core refuses writes');
        this.fence('sync: the central log appender stopped');
      })
      .finally(() => {
        this.running = undefined;
        if (this.wanted && !this.stopped && !this.ended) this.ring();
      });
  }

  /** No further append; resolves once the one in flight ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async loop(): Promise<void> {
    while (this.wanted && !this.stopped && !this.ended) {
      this.wanted = false;
      for (;;) {
        if (this.stopped || this.ended) return;
        const read = pendingEntries(this.db, this.appended, APPEND_BATCH);
        if (!read.length) break;
        let chars = 0;
        // While an acknowledgement waits, the append ends at its entry: the entries committed after
        // it (a projector's slice, often 100 kB and more) go in the next one, not in its round trip.
        const waited = this.share.figures[2];
        const cut = waited > this.appended ? waited : Number.POSITIVE_INFINITY;
        const batch = read.filter((e, i) => ((chars += e.changes.length) <= APPEND_CHARS && e.position <= cut) || i === 0);
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
          if (n > 0) this.advance(batch[n - 1].position, n, 0, 0);
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
    let chars = 0;
    for (const e of batch) chars += e.changes.length;
    this.advance(batch[batch.length - 1].position, batch.length, performance.now() - started, chars);
  }

  private advance(position: number, n: number, ms: number, chars: number): void {
    this.share.figures[0] = position;
    this.hooks.advanced(position, n, ms, chars);
  }

  private fence(message: string): void {
    this.ended = true;
    this.share.figures[1] = 1;
    this.hooks.fence(message);
  }
}
