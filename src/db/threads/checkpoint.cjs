// @ts-check
// The WAL checkpoint thread (src/db/checkpointer.ts): checkpoints the daemon's database every
// `intervalMs` on its own connection, off the daemon's event loop.
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const { openThreadDatabase } = require('./open.cjs');

/** @type {import('node:worker_threads').MessagePort} */
const port = /** @type {any} */ (parentPort);
/** @type {import('./open.cjs').ThreadDatabase & { intervalMs: number, gate?: SharedArrayBuffer, holdMaxMs?: number }} */
const opts = workerData;
// How many charges are between their job and their frame (src/db/checkpoint-gate.ts): a
// checkpoint beside a charge's flush slows that flush, so it waits for them, at most `holdMaxMs`
// (one interval in the daemon).
const gate = opts.gate ? new Int32Array(opts.gate) : null;
// Node has it; the project's TypeScript library (before ES2024) does not declare it.
const waitAsync = /** @type {(a: Int32Array, i: number, v: number, ms: number) => { async: boolean, value: Promise<string> | string }} */ (
  /** @type {any} */ (Atomics).waitAsync
);
// A checkpoint syncs the WAL and the database file as this connection's setting says: the daemon's.
const db = openThreadDatabase(opts);
let running = true;
let last = { log: -1, checkpointed: -1 };
/** @type {NodeJS.Timeout} */
let timer;
/** @param {number} [since] when this tick was first due (it waits for charges at most `holdMaxMs`) */
function tick(since = performance.now()) {
  if (!running) return;
  const held = gate ? Atomics.load(gate, 0) : 0;
  const left = (opts.holdMaxMs ?? opts.intervalMs) - (performance.now() - since);
  if (held > 0 && left > 0 && gate) {
    // Woken when the count changes (the daemon notifies on each release), or at the bound.
    const wait = waitAsync(gate, 0, held, left);
    if (typeof wait.value !== 'string') wait.value.then(() => tick(since));
    else setImmediate(() => tick(since));
    return;
  }
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
