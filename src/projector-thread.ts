import { parentPort, workerData } from 'node:worker_threads';
import { randomUUID } from 'node:crypto';
import type { Config } from './config.js';
import { systemClock } from './clock.js';
import { setCommitGate, setWriteTurn } from './db/database.js';
import { queueEntry, startCapture, stopCapture, takeChanges } from './db/change-capture.js';
import { Outbox } from './outbox/events.js';
import { feedBell } from './outbox/feed-changes.js';
import { ApiError } from './errors.js';
import { MODULES, buildRegistry } from './modules/index.js';
import { projectorWorker } from './sync/central/projector.js';
import { projectorBell } from './sync/central/projector-bell.js';
import { ingestBatch } from './sync/central/core-ingest.js';
import { newAppendShare, ringAppender } from './sync/central/append-loop.js';
import type { ThreadIn, ThreadOut, ThreadStart } from './sync/central/projector-host.js';
import { threadConnection, threadLogger } from './sync/central/thread-side.js';

/**
 * The leading chain core's projector on a thread of its own (docs/central.md, "The projector's
 * thread"; started by src/sync/central/projector-host.ts): a composition root like the daemon,
 * with its own connection to the core's SQLite file, its own capture triggers and commit gate. Each
 * slice it commits keeps its entry in the file at the position read inside the slice's transaction
 * (this connection and the daemon's queue in the order SQLite's write lock gives them); the
 * appender (on a thread of its own: src/sync/central/log-appender-thread.ts) sends it to the
 * central's log after the commit. The daemon's event loop answers `/api` meanwhile; what the
 * slices ring (the report, the feed relay, webhooks) is told to it by message.
 */
/** A slice on the thread: at most this many records or this long, or until a daemon write waits. */
const THREAD_SLICE_RECORDS = 1000;
const THREAD_SLICE_MS = 200;
/**
 * A slice gives way to a waiting daemon write only once it holds this many records or ran this
 * long: each slice costs a commit (a WAL flush) and an entry of the log, and the API's writes come
 * one after another during a catch-up, so ending at each one cuts the slices short. Not longer:
 * the daemon's write waits that long, and with the capture on a longer slice saves no CPU
 * (docs/decisions/0300-set-based-apply.md).
 */
const THREAD_SLICE_FLOOR = { records: 250, ms: 10 };

const port = parentPort!;
const start = workerData as ThreadStart;
const post = (m: ThreadOut) => port.postMessage(m);
const turnFlags = new Int32Array(start.turn);

const config = start.config as Config;
const log = threadLogger(config, post);
const db = threadConnection(config);
const abort = new AbortController();
const ctx = {
  config,
  db,
  clock: systemClock,
  log,
  outbox: new Outbox(db, systemClock),
  registry: buildRegistry(MODULES),
  bootId: randomUUID(),
  shutdown: abort.signal,
};
const share = newAppendShare(start.share);

/**
 * The thread's commit gate: its slice's changes kept in the file as the entry at the next position
 * (read inside the transaction: the daemon's connection queues too, in the write lock's order);
 * the appender sends it once rung, after the commit. Refused once the appender was fenced.
 */
function queue(): void {
  const changes = takeChanges(db);
  if (!changes) return;
  if (share.figures[1] === 1) throw new ApiError('central_standby', { message: 'This core no longer leads the central: nothing was written.' });
  const position = queueEntry(db, changes, randomUUID(), share.figures[0]);
  queueMicrotask(() => {
    // After the commit: the appender's thread, where it runs, wakes on the ring with no message.
    ringAppender(share);
    post({ queued: position });
  });
}

startCapture(db);
takeChanges(db);
setCommitGate(db, queue);
// The daemon's writes go first: no slice starts while one of its transactions waits (src/db/database.ts).
setWriteTurn(db, { flags: turnFlags, side: 'second' });

// Off the loop a slice may grow (each append and commit then carries more records) until a write
// of the daemon's waits for the lock: it ends after its current record once past its floor.
const projector = projectorWorker(ctx, {
  records: THREAD_SLICE_RECORDS,
  ms: THREAD_SLICE_MS,
  yieldAfter: THREAD_SLICE_FLOOR,
  yieldNow: () => Atomics.load(turnFlags, 0) > 0,
});
projectorBell(db).onSlice((storeId) => post({ sliced: storeId }));
feedBell(db).on('rows', (orgs: Array<string | null>) => post({ feed: orgs }));
ctx.outbox.notifier.on('events', () => post({ events: true }));

port.on('message', (m: ThreadIn) => {
  if ('ring' in m) projectorBell(db).ring();
  else if ('idle' in m) void projector.idle().then(() => post({ idle: m.idle }));
  else if ('stop' in m) void stop();
  else if ('ingest' in m) {
    try {
      ingestBatch(ctx, m.batch, () => Atomics.load(turnFlags, 0) > 0);
      post({ ingested: m.ingest });
      projectorBell(db).ring();
    } catch (err) {
      post({ ingested: m.ingest, error: (err as Error).message ?? String(err) });
    }
  }
});

async function stop(): Promise<void> {
  abort.abort();
  await projector.stop();
  setCommitGate(db, undefined);
  stopCapture(db);
  db.close();
  post({ stopped: true });
  port.close();
}

projector.start();
post({ started: true });
