import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../../config.js';
import { createPool } from '../pg/pool.js';
import { AppendLoop, newAppendShare } from './append-loop.js';
import type { AppenderIn, AppenderOut, AppenderStart } from './log-appender-host.js';
import { threadConnection, threadLogger } from './thread-side.js';

/**
 * The leading chain core's appender on a thread of its own (docs/central.md, "The projector's
 * thread"; started by src/sync/central/log-appender-host.ts): its own connection to the core's
 * SQLite file, from which it reads the entries the commits kept (`central_log_pending`), and its own
 * connection to PostgreSQL, to which it appends them (src/sync/central/append-loop.ts). The daemon's
 * event loop, which answers `/api`, neither reads nor writes the entries' text; it is told what the
 * log holds (the shared figure and a message) and answers what waited for it. Woken by every commit
 * that queued an entry (the shared ring), on either connection of the file.
 */
const port = parentPort!;
const start = workerData as AppenderStart;
const post = (m: AppenderOut) => port.postMessage(m);

const config = start.config as Config;
const log = threadLogger(config, post);
const db = threadConnection(config);
const pool = createPool({ connectionString: config.sync.postgres.url, max: 1, application_name: 'posd-core-appender' });
// An idle connection that dies (a server restart) must not end the thread: the next append reconnects.
pool.on('error', (err) => log.warn({ err }, 'sync: the appender thread lost its PostgreSQL connection'));
const share = newAppendShare(start.share);
const sender = new AppendLoop(db, pool, start.epoch, share, log, {
  advanced: (position, n, ms, chars) => post({ advanced: position, n, ms, chars }),
  fence: (message) => post({ fence: message }),
});
let stopping = false;
/** Node's `Atomics.waitAsync` (ES2024; the project's lib is older). */
const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number): { async: boolean; value: Promise<string> | string } }).waitAsync;

/** Appends whatever waits, then again at each ring, until stopped. */
async function watch(): Promise<void> {
  let seen = Atomics.load(share.rings, 0);
  sender.ring();
  while (!stopping) {
    // Asleep before the last look at the counter: a ring after that look sees [1] and notifies.
    Atomics.store(share.rings, 1, 1);
    const waited = waitAsync(share.rings, 0, seen);
    if (waited.async) await waited.value;
    Atomics.store(share.rings, 1, 0);
    seen = Atomics.load(share.rings, 0);
    if (!stopping) sender.ring();
  }
}

async function stop(): Promise<void> {
  stopping = true;
  Atomics.add(share.rings, 0, 1);
  Atomics.notify(share.rings, 0);
  await sender.stop();
  await pool.end().catch(() => undefined);
  db.close();
  post({ stopped: true });
  port.close();
}

port.on('message', (m: AppenderIn) => {
  if ('stop' in m) void stop();
});
post({ started: true });
void watch();
