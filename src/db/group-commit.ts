import { tx, type Db } from './database.js';
import { perDb } from './per-db.js';

interface Job {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: the writes of requests that arrive in the same turn of the event loop run in one
 * transaction, each inside its own savepoint, and become durable with one commit (one WAL flush
 * under `synchronous=FULL`). A job that throws rolls back only its savepoint and rejects alone;
 * if the commit itself fails every job of the batch rejects and nothing of it is written. A job's
 * promise resolves only after the commit, so a 2xx still means "on disk".
 */
export class GroupCommitter {
  private queue: Job[] = [];
  private scheduled = false;

  constructor(
    private readonly db: Db,
    private readonly maxBatch = 64,
  ) {}

  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
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
    const batch = this.queue.splice(0, this.maxBatch);
    if (this.queue.length) this.schedule();
    if (batch.length === 0) return;
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      tx(this.db, () => {
        for (const job of batch) {
          try {
            // Nested: a savepoint, so one job's failure leaves the others' writes in place.
            outcomes.push({ ok: true, value: tx(this.db, job.fn) });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      for (const job of batch) job.reject(error);
      return;
    }
    batch.forEach((job, i) => {
      const o = outcomes[i];
      if (o.ok) job.resolve(o.value);
      else job.reject(o.error);
    });
  }
}

const committers = perDb((db) => new GroupCommitter(db));

/** Runs `fn` in the database's next group commit; resolves once it is committed. */
export function groupCommit<T>(db: Db, fn: () => T): Promise<T> {
  return committers(db).run(fn);
}
