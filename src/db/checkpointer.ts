import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Db } from './database.js';
import { startThread, type ThreadDatabase } from './threads.js';
import { checkpointGate } from './checkpoint-gate.js';

/** SQLite's own default: a commit that leaves the WAL past this many pages checkpoints it. */
const SQLITE_AUTOCHECKPOINT_PAGES = 1000;
/**
 * The daemon connection's own checkpoint while the thread runs: a backstop, not the routine. The
 * WAL restarts from its beginning only when a writer starts while all of it is copied; under
 * unbroken writes the thread's checkpoint never catches the last commit, so without this the WAL
 * would grow for as long as the load lasts. At this size the daemon's commit checkpoints what the
 * thread left (a few pages), and the next commit restarts the WAL: one sync per about 40 MB.
 */
const BACKSTOP_PAGES = 10_000;

export interface CheckpointResult {
  /** Pages in the WAL when the thread checkpointed (-1 when it is not in WAL mode). */
  walPages: number;
  /** Of those, pages now copied into the database file. */
  checkpointedPages: number;
}

export interface Checkpointer {
  /** Emits `checkpoint` with a `CheckpointResult` whenever a tick's result differs from the last. */
  readonly notifier: EventEmitter;
  /** Ends the thread; the daemon's connection checkpoints on its own again (and at close). */
  stop(): Promise<void>;
}

/**
 * Moves WAL checkpoints off the daemon's event loop. By default SQLite checkpoints inside the
 * commit that fills the WAL past 1000 pages: that request's thread copies the pages into the
 * database file and syncs it, and every request waits behind it (a peer transfer writes about 28
 * pages, so one commit in 35 paid for a checkpoint). Here the daemon's connection never
 * checkpoints; a worker thread with its own connection to the file checkpoints every
 * `intervalMs`. Durability is unchanged: a commit is as durable as `synchronous` makes it before
 * any checkpoint, and the checkpoint syncs with the same setting. A thread that fails hands the
 * work back to the daemon's connection, so the WAL never grows without bound.
 */
export function startCheckpointer(db: Db, opts: ThreadDatabase & { intervalMs: number; log: Logger; holdMaxMs?: number }): Checkpointer {
  db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
  const inline = () => db.open && db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT_PAGES}`);
  // threads/checkpoint.cjs: its connection syncs as the daemon's does (`synchronous`).
  const worker = startThread('checkpoint', {
    file: opts.file,
    busyTimeoutMs: opts.busyTimeoutMs,
    synchronous: opts.synchronous,
    intervalMs: opts.intervalMs,
    // Read before each checkpoint: put off while a charge's batch is between its commit and its
    // frame (src/db/checkpoint-gate.ts).
    gate: checkpointGate(db).buffer,
    // The longest a checkpoint waits for them: one interval (a test sets more).
    holdMaxMs: opts.holdMaxMs ?? opts.intervalMs,
  });
  // The HTTP server keeps the process alive; the checkpointer must not.
  worker.unref();
  let stopping = false;
  const notifier = new EventEmitter();
  worker.on('message', (m: { error?: string } & Partial<CheckpointResult>) => {
    if (m.error) opts.log.warn({ error: m.error }, 'WAL checkpoint failed; retrying on the next tick');
    else notifier.emit('checkpoint', { walPages: m.walPages, checkpointedPages: m.checkpointedPages });
  });
  worker.on('error', (err) => opts.log.error({ err }, 'WAL checkpoint thread failed'));
  worker.on('exit', (code) => {
    if (stopping) return;
    opts.log.error({ code }, 'WAL checkpoint thread exited; the daemon connection checkpoints again');
    inline();
  });
  return {
    notifier,
    async stop() {
      if (stopping) return;
      stopping = true;
      const exited = new Promise((r) => worker.once('exit', r));
      // Unreferenced, the thread would let a stopping process exit before it closed its connection
      // (and before the daemon's stop finished).
      worker.ref();
      worker.postMessage('close');
      await exited;
      inline();
    },
  };
}
