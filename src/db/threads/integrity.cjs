// @ts-check
// The integrity check of a finished backup copy (src/system/backup.ts), off the daemon's event loop:
// `PRAGMA quick_check` reads every page of the copy, seconds for a large store.
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require('better-sqlite3');

/** @type {import('node:worker_threads').MessagePort} */
const port = /** @type {any} */ (parentPort);
/** @type {{ file: string, mmapBytes: number, statements?: string[] }} */
const opts = workerData;
try {
  const db = new Database(opts.file, { readonly: true, fileMustExist: true });
  try {
    // Read through a memory map (checkMmapBytes in src/system/backup.ts says why and how much).
    db.pragma(`mmap_size = ${Math.max(0, Math.floor(opts.mmapBytes || 0))}`);
    /** @type {string[]} */
    const lines = [];
    for (const statement of opts.statements ?? ['integrity_check']) {
      for (const row of /** @type {Array<Record<string, string>>} */ (db.pragma(statement))) lines.push(String(Object.values(row)[0]));
    }
    port.postMessage({ result: lines });
  } finally {
    db.close();
  }
} catch (err) {
  port.postMessage({ error: err instanceof Error ? err.message : String(err) });
}
