// @ts-check
// A PostgreSQL connection answering one query at a time for a thread that waits for it
// synchronously (src/sync/pg/sync-client.ts): a chain's leading core appends each transaction's
// changes to the central's log from inside that SQLite transaction, which cannot await.
// Each answer is posted to the port, then the shared flag is set to its id and notified.
'use strict';
const { workerData } = require('node:worker_threads');
const pg = require('pg');

/** @type {{ url: string, flag: SharedArrayBuffer, port: import('node:worker_threads').MessagePort }} */
const { url, flag, port } = workerData;
const signal = new Int32Array(flag);
/** @type {import('pg').Client | null} */
let client = null;

async function connection() {
  if (client) return client;
  const c = new pg.Client({ connectionString: url, application_name: 'posd-log-append', keepAlive: true });
  // A dead connection is dropped and the next query opens a new one.
  c.on('error', () => {
    if (client === c) client = null;
  });
  await c.connect();
  client = c;
  return c;
}

port.on('message', async (/** @type {{ id: number, text: string, values: unknown[] }} */ m) => {
  let reply;
  try {
    const c = await connection();
    const res = await c.query(m.text, m.values);
    reply = { id: m.id, rows: res.rows, rowCount: res.rowCount };
  } catch (err) {
    const e = /** @type {{ message?: string, code?: string }} */ (err);
    reply = { id: m.id, error: String(e.message ?? err), code: e.code };
    // A failure that is not PostgreSQL's answer (a cut connection): start over with a new one.
    if (!e.code) {
      const c = client;
      client = null;
      c?.end().catch(() => undefined);
    }
  }
  port.postMessage(reply);
  Atomics.store(signal, 0, m.id);
  Atomics.notify(signal, 0);
});
