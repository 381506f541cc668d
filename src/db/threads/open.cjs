// @ts-check
// Shared by the thread programs beside this file. They are plain CommonJS so the same file runs from
// the build (dist/src/db/threads/, where tsc copies them) and from the sources under the test
// runner: a worker thread cannot load .ts files on Node 20.
'use strict';
const Database = require('better-sqlite3');

/**
 * @typedef {object} ThreadDatabase
 * @property {string} file the daemon's database file (a thread never makes one)
 * @property {number} busyTimeoutMs as the daemon's connection
 * @property {'FULL' | 'NORMAL' | 'EXTRA'} synchronous how this connection's commits and checkpoints sync
 */

/**
 * Opens the thread's own connection to the daemon's database with the pragmas every posd
 * connection has (src/db/database.ts); the daemon has already set WAL mode, which is the file's.
 * @param {ThreadDatabase} opts
 * @returns {import('better-sqlite3').Database}
 */
function openThreadDatabase(opts) {
  const db = new Database(opts.file, { fileMustExist: true });
  db.pragma(`busy_timeout = ${Number(opts.busyTimeoutMs)}`);
  db.pragma(`synchronous = ${opts.synchronous}`);
  db.pragma('foreign_keys = ON');
  return db;
}

module.exports = { openThreadDatabase };
