import { parentPort, workerData } from 'node:worker_threads';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Config } from './config.js';
import { systemClock } from './clock.js';
import { createLogger } from './logger.js';
import { openDatabase, setCommitGate, setWriteTurn } from './db/database.js';
import { databaseFile } from './db/paths.js';
import { logPosition, replayEntries, setLogPosition, startCapture, stopCapture, takeChanges } from './db/change-capture.js';
import { Outbox } from './outbox/events.js';
import { feedBell } from './outbox/feed-changes.js';
import { ApiError } from './errors.js';
import { MODULES, buildRegistry } from './modules/index.js';
import { projectorWorker } from './sync/central/projector.js';
import { projectorBell } from './sync/central/projector-bell.js';
import { ingestBatch } from './sync/central/core-ingest.js';
import { appendEntry, entriesAfterSync } from './sync/pg/central-log.js';
import { SyncPgClient } from './sync/pg/sync-client.js';
import type { ThreadIn, ThreadOut, ThreadStart } from './sync/central/projector-host.js';

/**
 * The leading chain core's projector on a thread of its own (docs/central.md, "The projector's
 * thread"; started by src/sync/central/projector-host.ts): a composition root like the daemon,
 * with its own connection to the core's SQLite file, its own capture triggers and commit gate. Each
 * slice it commits is appended to the central's log first, at the position read from the file
 * inside the slice's transaction: this connection and the daemon's append in the order SQLite's
 * write lock gives them. The daemon's event loop answers `/api` meanwhile; what the slices ring
 * (the report, the feed relay, webhooks) is told to it by message.
 */
/** A slice on the thread: at most this many records or this long, or until a daemon write waits. */
const THREAD_SLICE_RECORDS = 1000;
const THREAD_SLICE_MS = 200;

const port = parentPort!;
const start = workerData as ThreadStart;
const post = (m: ThreadOut) => port.postMessage(m);
const turnFlags = new Int32Array(start.turn);

/** The thread's log lines go to the daemon's logger (its destination, its redaction). */
const lines = new Writable({
  write(chunk: Buffer, _enc, done) {
    post({ log: chunk.toString('utf8') });
    done();
  },
});
const config = start.config as Config;
const log = createLogger(config, lines);
const db = openDatabase(databaseFile(config), { synchronous: config.database.synchronous, busyTimeoutMs: config.database.busy_timeout_ms, migrate: false });
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
const client = new SyncPgClient(start.url);
/** An append's outcome is unknown (a lost answer): the log is re-read before this thread's next write. */
let unsure = false;
let repairing = false;

function append(): void {
  const changes = takeChanges(db);
  if (!changes) return;
  if (unsure) {
    repairSoon();
    throw new ApiError('central_log_unavailable');
  }
  // The daemon's connection appends too: the file's own figure, read under the write lock.
  const next = logPosition(db) + 1;
  let appended: boolean;
  const started = performance.now();
  try {
    appended = appendEntry(client, next, start.epoch, changes.json, changes.count, start.appendTimeoutMs);
  } catch (err) {
    unsure = true;
    repairSoon();
    log.error({ err: { message: (err as Error).message } }, 'sync: the projector thread could not append to the central log; its slice is refused');
    throw new ApiError('central_log_unavailable');
  }
  if (!appended) {
    post({ fenced: true });
    throw new ApiError('central_standby', { message: 'This core no longer leads the central: nothing was written.' });
  }
  setLogPosition(db, next);
  post({ appended: next, ms: performance.now() - started });
}

/** Replays what the log holds past this file's place (an append whose answer was lost), then slices go on. */
function repairSoon(): void {
  if (repairing) return;
  repairing = true;
  setImmediate(() => {
    try {
      const entries = entriesAfterSync(client, logPosition(db), 200, start.appendTimeoutMs);
      setCommitGate(db, undefined);
      try {
        let i = 0;
        while (i < entries.length) i = replayEntries(db, entries, i, 5000);
        takeChanges(db);
      } finally {
        setCommitGate(db, append);
      }
      if (entries.length < 200) unsure = false;
    } catch (err) {
      log.warn({ err }, 'sync: the central log is not readable yet; the projector thread waits');
    } finally {
      repairing = false;
      if (unsure) setTimeout(repairSoon, 500);
    }
  });
}

startCapture(db);
takeChanges(db);
setCommitGate(db, append);
// The daemon's writes go first: no slice starts while one of its transactions waits (src/db/database.ts).
setWriteTurn(db, { flags: turnFlags, side: 'second' });

// Off the loop a slice may grow (each append and commit then carries more records) until a write
// of the daemon's waits for the lock: it ends after its current record.
const projector = projectorWorker(ctx, { records: THREAD_SLICE_RECORDS, ms: THREAD_SLICE_MS, yieldNow: () => Atomics.load(turnFlags, 0) > 0 });
projectorBell(db).onSlice((storeId) => post({ sliced: storeId }));
feedBell(db).on('rows', (orgs: Array<string | null>) => post({ feed: orgs }));
ctx.outbox.notifier.on('events', () => post({ events: true }));

port.on('message', (m: ThreadIn) => {
  if ('ring' in m) projectorBell(db).ring();
  else if ('idle' in m) void projector.idle().then(() => post({ idle: m.idle }));
  else if ('stop' in m) void stop();
  else if ('ingest' in m) {
    try {
      ingestBatch(ctx, m.batch);
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
  await client.close();
  db.close();
  post({ stopped: true });
  port.close();
}

projector.start();
post({ started: true });
