import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';
import { startThread } from '../../db/threads.js';
import { WRITE_SQL, type WriteStatement } from './write-sql.js';

/** One statement of the delivery worker's bookkeeping (a key of `WRITE_SQL`) and its named parameters. */
export type WriteOp = [statement: WriteStatement, params: Record<string, unknown>];

/**
 * Where the delivery worker's routine records are written: the fan-out's delivery rows with the
 * cursor, and successful attempts. `write` runs its ops in one transaction and resolves once it has
 * committed; a rejection means nothing of it was written (the worker does that work again).
 */
export interface BookkeepingWriter {
  write(ops: WriteOp[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * On the daemon's own connection, in the caller's thread (`bookkeeping` is the worker's
 * synchronous=NORMAL transaction). Used for an in-memory database, which no other connection can
 * open.
 */
/** The statements of `WRITE_SQL` prepared on a connection, and a runner of ops with them (no transaction of its own). */
export function writeOps(db: Db): (ops: WriteOp[]) => void {
  const statements = new Map(Object.entries(WRITE_SQL).map(([k, sql]) => [k as WriteStatement, db.prepare(sql)]));
  return (ops) => {
    for (const [k, params] of ops) statements.get(k)!.run(params);
  };
}

export class InlineWriter implements BookkeepingWriter {
  private readonly run: (ops: WriteOp[]) => void;

  constructor(
    db: Db,
    private readonly bookkeeping: <T>(fn: () => T) => T,
  ) {
    this.run = writeOps(db);
  }

  write(ops: WriteOp[]): Promise<void> {
    try {
      this.bookkeeping(() => this.run(ops));
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface Pending {
  resolve: () => void;
  reject: (err: Error) => void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * On a worker thread with its own connection to the database file: the SQLite work of recording
 * (statements, commits, WAL checkpoints) runs beside the event loop that sends the requests instead
 * of on it. A thread that dies (any reason) fails the writes it had not answered, and the next
 * write starts a new thread: what those writes carried was not committed, so the worker redoes it
 * (fans the events out again, sends those deliveries again with the same webhook-id).
 */
export class ThreadWriter implements BookkeepingWriter {
  private thread: Thread | undefined;
  private nextId = 1;
  private closed = false;
  private readonly unanswered = new Set<Promise<void>>();

  constructor(
    private readonly file: string,
    private readonly busyTimeoutMs: number,
    private readonly log: Logger,
  ) {}

  write(ops: WriteOp[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the webhook writer is closed'));
    const t = (this.thread ??= this.start());
    const p = new Promise<void>((resolve, reject) => {
      const id = this.nextId++;
      t.pending.set(id, { resolve, reject });
      t.worker.postMessage({ id, ops });
    });
    this.unanswered.add(p);
    const forget = () => void this.unanswered.delete(p);
    p.then(forget, forget);
    return p;
  }

  /** Waits for the writes sent, then ends the thread. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.unanswered]);
    const t = this.thread;
    if (!t) return;
    const exited = new Promise((r) => t.worker.once('exit', r));
    t.worker.postMessage('close');
    await exited;
  }

  /** Ends the thread at once, as a crash would (tests). */
  async crash(): Promise<void> {
    await this.thread?.worker.terminate();
  }

  private start(): Thread {
    // db/threads/bookkeeping.cjs runs only the statements of WRITE_SQL it is sent, so the rules stay
    // in the worker's code. synchronous=NORMAL: the records are idempotent (docs/webhooks.md), so a
    // power cut may lose the newest, never corrupt them.
    const worker = startThread('bookkeeping', { file: this.file, busyTimeoutMs: this.busyTimeoutMs, synchronous: 'NORMAL', sql: WRITE_SQL });
    // The daemon's server keeps the process alive; an idle writer must not.
    worker.unref();
    const t: Thread = { worker, pending: new Map() };
    worker.on('message', (m: { id: number; error?: string }) => {
      const p = t.pending.get(m.id);
      t.pending.delete(m.id);
      if (!p) return;
      if (m.error === undefined) p.resolve();
      else p.reject(new Error(m.error));
    });
    worker.on('error', (err) => this.log.error({ err }, 'webhook writer thread failed'));
    worker.on('exit', (code) => {
      if (this.thread === t) this.thread = undefined;
      const err = new Error(`the webhook writer thread exited (code ${code}) before answering`);
      for (const p of t.pending.values()) p.reject(err);
      t.pending.clear();
    });
    return t;
  }
}
