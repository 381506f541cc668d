import type Database from 'better-sqlite3';
import { commitAudit, tx, type Db } from './database.js';
import { isDiskFull, noteWrite } from './disk-full.js';
import { holdCheckpoints } from './checkpoint-gate.js';
import { perDb } from './per-db.js';
import { type WalFlusher, walFlusherOf } from './wal-flush.js';
import { logHeld } from './log-hold.js';

interface Job {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** What the job asked to run once its writes are durable (`afterCommit`): signals to other parts. */
  after: Array<() => void>;
  /** Run before anything else of the batch once it is durable (`afterCommit(…, { first: true })`). */
  first: Array<() => void>;
  /** Writes that joined this job's batch from inside it (`groupCommit` called while it ran). */
  joined: Array<{ value: unknown; resolve: (value: unknown) => void; reject: (error: unknown) => void }>;
  /** Answered once the batch committed, not after its flush (`groupCommitUnflushed`). */
  unflushed?: boolean;
  /** Set by a `first` signal: ends this job's hold on checkpoints (decision 0288); idempotent. */
  release?: () => void;
}

/**
 * Group commit: the writes of requests that arrive in the same turn of the event loop run in one
 * transaction, each inside its own savepoint, and commit together. A job that throws rolls back
 * only its savepoint and rejects alone; if the commit itself fails every job of the batch rejects
 * and nothing of it is written. Under `synchronous=FULL` the batch commits without SQLite's flush
 * and waits for the WAL's flush off the event loop (src/db/wal-flush.ts), so reads and the next
 * batch go on meanwhile; a job's promise resolves, and its `afterCommit` signals run, only once the
 * flush has ended, so a 2xx still means "on disk".
 */
export class GroupCommitter {
  private queue: Job[] = [];
  private scheduled = false;
  private readonly flusher: WalFlusher | null;
  private readonly withoutFlush?: Database.Statement;
  private readonly withFlush?: Database.Statement;

  constructor(
    private readonly db: Db,
    private readonly maxBatch = 64,
    flusher: WalFlusher | null = walFlusherOf(db),
  ) {
    this.flusher = flusher;
    if (flusher) {
      const level = db.pragma('synchronous', { simple: true }) as number;
      this.withoutFlush = db.prepare('PRAGMA synchronous = NORMAL');
      this.withFlush = db.prepare(`PRAGMA synchronous = ${level}`);
    }
  }

  /** `unflushed`: answered once the batch committed, before its flush (see `groupCommitUnflushed`). */
  run<T>(fn: () => T, unflushed = false): Promise<T> {
    const current = running.get(this.db);
    if (current) {
      // Called from inside a job of the batch running now (a write route's handler runs in one,
      // src/api/write-pipeline.ts): the write joins this batch at once, in a savepoint of its own,
      // and is answered with it; were the job around it to fail, it fails with it.
      return new Promise<T>((resolve, reject) => {
        try {
          current.joined.push({ value: tx(this.db, fn), resolve: resolve as (v: unknown) => void, reject });
        } catch (error) {
          reject(error);
        }
      });
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject, after: [], first: [], joined: [], unflushed });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    let batch = this.queue.splice(0, this.maxBatch);
    if (this.queue.length) this.schedule();
    if (batch.length === 0) return;
    let outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    commitAudit.inPipeline = true;
    this.withoutFlush?.run();
    try {
      tx(this.db, () => {
        for (const job of batch) {
          running.set(this.db, job);
          try {
            // Nested: a savepoint, so one job's failure leaves the others' writes in place.
            outcomes.push({ ok: true, value: tx(this.db, job.fn) });
          } catch (error) {
            job.release?.();
            job.after = [];
            job.first = [];
            for (const j of job.joined.splice(0)) j.reject(error);
            outcomes.push({ ok: false, error });
          } finally {
            running.delete(this.db);
          }
        }
      });
    } catch (error) {
      // A full disk fails the commit (nothing of the batch is written); the next batch retries it.
      noteWrite(this.db, error);
      for (const job of batch) {
        job.release?.();
        for (const j of job.joined) j.reject(error);
        job.reject(error);
      }
      return;
    } finally {
      commitAudit.inPipeline = false;
      this.withFlush?.run();
    }
    const refused = outcomes.find((o) => !o.ok && isDiskFull(o.error));
    noteWrite(this.db, refused && !refused.ok ? refused.error : undefined);
    // On a chain's leading core the batch is answered once the central's log holds it too: the
    // position it committed at, read now, appended while the flush runs (src/db/log-hold.ts).
    const held = logHeld(this.db);
    held?.catch(() => undefined);
    const answer = (jobs: Job[], outs: typeof outcomes) => {
      if (!held) return this.settle(jobs, outs);
      held.then(
        () => this.settle(jobs, outs),
        (error: unknown) => this.fail(jobs, error),
      );
    };
    if (!this.flusher) return answer(batch, outcomes);
    if (batch.some((job) => job.unflushed)) {
      const early = batch.filter((job) => job.unflushed);
      // Left for the next flush: none starts for these commits alone...
      this.flusher.uncovered();
      // ...but for their `afterCommit` signals, which still wait for the disk (and the log).
      const signals = batch.flatMap((job, i) => (job.unflushed && outcomes[i].ok ? [...job.first.splice(0), ...job.after.splice(0)] : []));
      const released = () => early.forEach((job) => job.release?.());
      if (signals.length)
        (held ? Promise.all([this.flusher.whenDurable(), held]) : this.flusher.whenDurable())
          .then(() => signals.forEach((fn) => fn()), noteWriteOf(this.db))
          .finally(released);
      else released();
      this.settle(
        early,
        outcomes.filter((_, i) => batch[i].unflushed),
      );
      outcomes = outcomes.filter((_, i) => !batch[i].unflushed);
      batch = batch.filter((job) => !job.unflushed);
      if (batch.length === 0) return;
    }
    const durable = this.flusher.committed(batch.length);
    // Someone waits on this batch alone (a terminal's charge): its flush starts now, not after a
    // gathering wait for other writers (decision 0291).
    if (batch.some((job) => job.first.length > 0)) this.flusher.flushNow();
    const settled = batch;
    const settledOutcomes = outcomes;
    durable.then(
      () => answer(settled, settledOutcomes),
      (error: unknown) => {
        // Committed, but the disk did not say it holds it: answer no job as done (an
        // Idempotency-Key's retry finds the stored answer once the disk does).
        noteWrite(this.db, error);
        this.fail(settled, error);
      },
    );
  }

  /** Committed, but not known to be durable (on disk, or in the central's log): no job answered as done. */
  private fail(batch: Job[], error: unknown): void {
    for (const job of batch) {
      job.release?.();
      for (const j of job.joined) j.reject(error);
      job.reject(error);
    }
  }

  private settle(batch: Job[], outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }>): void {
    // What leaves the box first (a terminal's charge frame), in the turn the flush ended: before
    // the batch's other signals and answers.
    batch.forEach((job, i) => {
      try {
        if (outcomes[i].ok) for (const fn of job.first) fn();
      } finally {
        job.release?.();
      }
    });
    batch.forEach((job, i) => {
      const o = outcomes[i];
      if (o.ok) {
        for (const fn of job.after) fn();
        for (const j of job.joined) j.resolve(j.value);
        job.resolve(o.value);
      } else job.reject(o.error);
    });
  }
}

/** A flush that failed: noted as a write error (signals waiting for it never run). */
const noteWriteOf = (db: Db) => (error: unknown) => noteWrite(db, error);

const committers = perDb((db) => new GroupCommitter(db));
/** The job a batch is running now, per database: where `afterCommit` files what it is given. */
const running = new WeakMap<Db, Job>();

/**
 * Runs `fn` in the database's next group commit; resolves once it is committed. The one commit
 * pipeline of every write that answers a request or a terminal (`sendCommitted` in
 * src/api/idempotency.ts for routes) and of the workers' own bookkeeping.
 */
export function groupCommit<T>(db: Db, fn: () => T): Promise<T> {
  return committers(db).run(fn);
}

/**
 * Like `groupCommit`, but resolves once the batch has committed, without waiting for its flush, and
 * no flush starts for it alone: the next commit's flush covers it. For a write that need not be on
 * disk before the caller's next one (an Idempotency-Key's claim before the request's write: a
 * power cut before that write's flush takes both, and nothing was answered). Whatever answers
 * from what it returns must wait for `whenDurable` first; its `afterCommit` signals wait for a
 * flush as everywhere.
 */
export function groupCommitUnflushed<T>(db: Db, fn: () => T): Promise<T> {
  return committers(db).run(fn, true);
}

/**
 * Whether the caller runs inside a job of a group commit on `db`: its writes commit with the batch,
 * and what it hands `afterCommit` runs once the batch is on disk.
 */
export function inGroupCommit(db: Db): boolean {
  return running.has(db);
}

/**
 * Runs `fn` once the caller's writes are durable: after the batch commits and its flush ends when
 * called inside a group-commit job (never, if the job or the commit fails), at once otherwise (the caller's own
 * transaction has returned). For signals to other parts of the daemon (the terminal bridge) that
 * must never act on a change that may still roll back. `first`: for a frame to a device that waits on
 * this batch alone (a terminal's charge): it runs before the batch's other signals and answers, and
 * the batch's flush starts without gathering (decision 0291).
 */
export function afterCommit(db: Db, fn: () => void, opts: { first?: boolean } = {}): void {
  const job = running.get(db);
  if (!job) return fn();
  if (opts.first) {
    job.first.push(fn);
    // No checkpoint starts from now until the frame has left (decision 0288).
    job.release ??= holdCheckpoints(db);
  } else job.after.push(fn);
}
