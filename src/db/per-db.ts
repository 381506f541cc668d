import type { Db } from './database.js';

/**
 * One value per database connection, made on first use: a store's prepared statements live as long
 * as the connection they were prepared on, and a second connection (the CLI beside the daemon, a
 * test reopening the file) gets its own. Keyed weakly, so a closed database takes them along.
 */
export function perDb<T>(make: (db: Db) => T): (db: Db) => T {
  const made = new WeakMap<Db, T>();
  return (db) => {
    let value = made.get(db);
    if (value === undefined) made.set(db, (value = make(db)));
    return value;
  };
}
