import type { Db } from './database.js';

/**
 * What a chain's leading core holds every acknowledgement on (docs/central.md, "One log"): its
 * transactions commit to SQLite before their entry is appended to the central's log in PostgreSQL,
 * so an answer, a webhook, a mail or a report to PostgreSQL waits, besides the disk's flush, for
 * the log to hold everything the file held when it was asked (src/sync/central/log-appender.ts).
 * Undefined on every other database: nothing waits.
 */
const holds = new WeakMap<Db, () => Promise<void> | undefined>();

export function setLogHold(db: Db, hold: (() => Promise<void> | undefined) | undefined): void {
  if (hold) holds.set(db, hold);
  else holds.delete(db);
}

/** Resolves once the central's log holds every entry this file holds now (undefined: nothing to wait for). */
export function logHeld(db: Db): Promise<void> | undefined {
  return holds.get(db)?.();
}
