// @ts-check
// The WAL checkpoint thread (src/db/checkpointer.ts): checkpoints the daemon's database every
// `intervalMs` on its own connection, off the daemon's event loop.
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { openThreadDatabase } = require('./open.cjs');

/** @type {import('node:worker_threads').MessagePort} */
const port = /** @type {any} */ (parentPort);
/** @type {import('./open.cjs').ThreadDatabase & { intervalMs: number }} */
const opts = workerData;
// A checkpoint syncs the WAL and the database file as this connection's setting says: the daemon's.
const db = openThreadDatabase(opts);
let running = true;
let last = { log: -1, checkpointed: -1 };
/** @type {NodeJS.Timeout} */
let timer;
function tick() {
  if (!running) return;
  try {
    // PASSIVE never waits for the writer or readers: it copies what it can and leaves the rest for
    // the next tick. The next writer restarts the WAL from its start once all of it is copied.
    const [r] = /** @type {Array<{ busy: number, log: number, checkpointed: number }>} */ (db.pragma('wal_checkpoint(PASSIVE)'));
    if (r.log !== last.log || r.checkpointed !== last.checkpointed) {
      last = r;
      port.postMessage({ walPages: r.log, checkpointedPages: r.checkpointed });
    }
  } catch (err) {
    port.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
  timer = setTimeout(tick, opts.intervalMs);
}
timer = setTimeout(tick, opts.intervalMs);
port.on('message', (m) => {
  if (m !== 'close') return;
  running = false;
  clearTimeout(timer);
  db.close();
  port.close();
});
