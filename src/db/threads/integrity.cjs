// @ts-check
// The integrity check of a finished backup copy (src/system/backup.ts), off the daemon's event loop:
// `PRAGMA quick_check` reads every page of the copy, seconds for a large store.
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require('better-sqlite3');

/** @type {import('node:worker_threads').MessagePort} */
const port = /** @type {any} */ (parentPort);
/** @type {{ file: string, check: 'integrity_check' | 'quick_check', mmapBytes: number }} */
const opts = workerData;
try {
  const db = new Database(opts.file, { readonly: true, fileMustExist: true });
  try {
    // Read through a memory map (checkMmapBytes in src/system/backup.ts says why and how much).
    db.pragma(`mmap_size = ${Math.max(0, Math.floor(opts.mmapBytes || 0))}`);
    if (opts.check !== 'integrity_check' && opts.check !== 'quick_check') throw new Error(`not an integrity check: ${opts.check}`);
    const rows = /** @type {Array<Record<string, string>>} */ (db.pragma(opts.check));
    port.postMessage({ result: rows.map((row) => String(Object.values(row)[0])) });
  } finally {
    db.close();
  }
} catch (err) {
  port.postMessage({ error: err instanceof Error ? err.message : String(err) });
}
