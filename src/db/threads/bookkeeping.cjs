// @ts-check
// The webhook bookkeeping writer's thread (src/modules/webhooks/writer.ts): runs the statements it
// is given, a message's ops in one transaction, on its own connection. It only runs what it is
// sent, so the rules stay in the worker's code.
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { openThreadDatabase } = require('./open.cjs');

/** @type {import('node:worker_threads').MessagePort} */
const port = /** @type {any} */ (parentPort);
/** @type {import('./open.cjs').ThreadDatabase & { sql: Record<string, string> }} */
const opts = workerData;
const db = openThreadDatabase(opts);
const statements = new Map(Object.entries(opts.sql).map(([k, sql]) => [k, db.prepare(sql)]));
const run = db.transaction((/** @type {Array<[string, Record<string, unknown>]>} */ ops) => {
  for (const [k, params] of ops) {
    const statement = statements.get(k);
    if (!statement) throw new Error(`unknown statement ${k}`);
    statement.run(params);
  }
});
port.on('message', (/** @type {'close' | { id: number, ops: Array<[string, Record<string, unknown>]> }} */ m) => {
  if (m === 'close') {
    db.close();
    port.close();
    return;
  }
  try {
    run.immediate(m.ops);
    port.postMessage({ id: m.id });
  } catch (err) {
    port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
  }
});
