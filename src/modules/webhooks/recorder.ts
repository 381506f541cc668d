import type { Statement } from 'better-sqlite3';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { applyFailure, succeeded, successOps, type Outcome } from './outcome.js';
import type { WebhooksStore } from './store.js';
import type { BookkeepingWriter, WriteOp } from './writer.js';

/**
 * Outcomes are committed together: after this many, or this long after the first of a group
 * (`FLUSH_DELAY_MS` when an outcome in it is waited for: a failure's retry schedule, a FIFO
 * endpoint's next delivery, a manual send's answer; `QUIET_DELAY_MS` when it holds only automatic
 * successes outside a FIFO order, whose record nothing waits for: fewer, larger commits, decision 0264).
 */
const FLUSH_BATCH = 512;
const FLUSH_DELAY_MS = 5;
const QUIET_DELAY_MS = 20;

/**
 * A transaction for the delivery worker's own records on the daemon's connection, committed without
 * waiting for the disk flush (`synchronous=NORMAL` for its duration; the connection's setting is
 * restored after). They are idempotent: a power cut can only lose the newest of them, after which
 * the cursor is behind (rows are made again, past the cursor only) or an attempt's outcome is
 * missing (the delivery is sent again with the same webhook-id). Events themselves are committed by
 * their emitters with the configured durability. On slow store disks this halves the flushes
 * between an event and its first attempt.
 */
export function bookkeepingTx(ctx: AppContext): <T>(fn: () => T) => T {
  const db = ctx.db;
  // Prepared once: `db.pragma()` compiles its statement at every call, twice per group.
  let pragmas: { normal: Statement; restore: Statement } | undefined;
  return <T>(fn: () => T): T => {
    if (db.inTransaction) return tx(db, fn);
    pragmas ??= {
      normal: db.prepare('PRAGMA synchronous = NORMAL'),
      restore: db.prepare(`PRAGMA synchronous = ${ctx.config.database.synchronous}`),
    };
    pragmas.normal.run();
    try {
      return tx(db, fn);
    } finally {
      pragmas.restore.run();
    }
  };
}

/**
 * Commits attempts' outcomes in groups: successes through the writer (two statements each, no
 * reads, two statements per group of like answers), failures on the daemon's connection (they read the delivery to schedule its retry, and a
 * 410 disables its endpoint). `record` resolves once its outcome has committed (or failed to: then
 * the delivery is still due and is sent again), so a delivery is never sent again before then.
 */
export class OutcomeRecorder {
  private outcomes: Array<{ outcome: Outcome; done: () => void }> = [];
  private flushScheduled = false;
  private flushTimer: NodeJS.Timeout | undefined;
  /** The group's timer is the short one (an outcome in it is waited for). */
  private prompt = false;

  constructor(
    private readonly ctx: AppContext,
    private readonly store: WebhooksStore,
    private readonly writer: BookkeepingWriter,
    private readonly bookkeeping: <T>(fn: () => T) => T,
    /** Rows read ahead may be stale or rows read past due again: a 410 disabled an endpoint (its pending deliveries canceled), or a group failed to commit. */
    private readonly reread: () => void,
    /** Endpoints in a failing streak (worker.ts): their successes end it, failures add to it. */
    private readonly failing: Set<string> = new Set(),
    /** Whether an endpoint delivers first-in-first-out: its success makes the next one due. */
    private readonly fifo: (endpointId: string) => boolean = () => false,
    /** Whether no other attempt is on the wire: then no outcome is coming to group with this one. */
    private readonly idle: () => boolean = () => false,
  ) {}

  /** Queues an outcome for the next group commit; resolves once it is committed. */
  record(outcome: Outcome): Promise<void> {
    return new Promise((resolve) => {
      this.outcomes.push({ outcome, done: resolve });
      // Nothing else on the wire (one event at a time): waiting would group nothing, and its commit
      // would land in the path of the next event's delivery; it is written now instead.
      if (this.outcomes.length >= FLUSH_BATCH || (this.idle() && !this.flushScheduled)) {
        clearTimeout(this.flushTimer);
        this.flushScheduled = true;
        this.prompt = true;
        setImmediate(() => this.flush());
        return;
      }
      const waitedFor = !succeeded(outcome) || outcome.manual || this.fifo(outcome.endpointId);
      if (this.flushScheduled && (this.prompt || !waitedFor)) return;
      if (this.flushScheduled) clearTimeout(this.flushTimer);
      this.flushScheduled = true;
      this.prompt = waitedFor;
      // A few milliseconds of grouping spare many commits when deliveries stream; an attempt's slot
      // is already free, so this delays only the record (and the re-sending of a crashed group).
      this.flushTimer = setTimeout(() => this.flush(), waitedFor ? FLUSH_DELAY_MS : QUIET_DELAY_MS);
    });
  }

  private flush(): void {
    clearTimeout(this.flushTimer);
    this.flushScheduled = false;
    const batch = this.outcomes;
    if (batch.length === 0) return;
    this.outcomes = [];
    const now = isoTime(this.ctx.clock.now());
    const successes: Outcome[] = [];
    const written: Array<() => void> = [];
    const failed: typeof batch = [];
    for (const item of batch) {
      if (succeeded(item.outcome)) {
        successes.push(item.outcome);
        written.push(item.done);
      } else failed.push(item);
    }
    const ops: WriteOp[] = successes.length > 0 ? successOps(successes, now) : [];
    if (this.failing.size > 0) {
      for (const o of successes) {
        if (this.failing.delete(o.endpointId)) ops.push(['clearFailing', { id: o.endpointId }]);
      }
    }
    // In the same transaction as the success: the next of a FIFO endpoint's order is due now.
    const promoted = new Set<string>();
    for (const o of successes) {
      if (!promoted.has(o.endpointId) && this.fifo(o.endpointId)) {
        promoted.add(o.endpointId);
        ops.push(['promoteNext', { id: o.endpointId, now_ms: this.ctx.clock.now() }]);
      }
    }
    if (failed.length > 0) {
      try {
        this.bookkeeping(() => {
          for (const { outcome } of failed) {
            applyFailure(this.ctx, this.store, outcome);
            if (!outcome.manual) this.failing.add(outcome.endpointId);
          }
        });
        if (failed.some(({ outcome }) => outcome.responseCode === 410)) this.reread();
      } catch (err) {
        this.ctx.log.error({ err }, 'recording failed webhook attempts failed; they will be sent again');
      }
      for (const { done } of failed) done();
    }
    if (ops.length > 0) {
      this.writer
        .write(ops)
        .catch((err) => {
          // Still due, before where the dispatcher's next read of due rows would go on from.
          this.reread();
          this.ctx.log.error({ err }, 'recording webhook attempts failed; they will be sent again');
        })
        .finally(() => {
          for (const done of written) done();
        });
    }
  }
}
