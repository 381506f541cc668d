// @ts-check
// The integrity check of a finished backup copy (src/system/backup.ts), off the daemon's event loop:
// `PRAGMA integrity_check` reads every page and index of the copy, seconds for a large store.
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require('better-sqlite3');

/** @type {import('node:worker_threads').MessagePort} */
const port = /** @type {any} */ (parentPort);
/** @type {{ file: string, mmapBytes: number }} */
const opts = workerData;
try {
  const db = new Database(opts.file, { readonly: true, fileMustExist: true });
  try {
    // Read through a memory map (checkMmapBytes in src/system/backup.ts says why and how much).
    db.pragma(`mmap_size = ${Math.max(0, Math.floor(opts.mmapBytes || 0))}`);
    const rows = /** @type {Array<{ integrity_check: string }>} */ (db.pragma('integrity_check'));
    port.postMessage({ result: rows.map((r) => r.integrity_check) });
  } finally {
    db.close();
  }
} catch (err) {
  port.postMessage({ error: err instanceof Error ? err.message : String(err) });
}
