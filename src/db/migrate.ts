import type Database from 'better-sqlite3';
import { MIGRATIONS } from './migrations/index.js';

export interface Migration {
  /** Strictly increasing; stored in `PRAGMA user_version` once applied. */
  version: number;
  name: string;
  up: string | ((db: Database.Database) => void);
}

export class DatabaseTooNewError extends Error {
  constructor(
    readonly found: number,
    readonly supported: number,
  ) {
    super(
      `the database is at schema version ${found}, newer than this posd understands (${supported}); ` +
        'run the newer posd that wrote it, or restore a backup made by this version',
    );
    this.name = 'DatabaseTooNewError';
  }
}

export function latestVersion(migrations: readonly Migration[] = MIGRATIONS): number {
  return migrations.reduce((max, m) => Math.max(max, m.version), 0);
}

export function schemaVersion(db: Database.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/**
 * Applies pending migrations, each in its own transaction together with the version bump, so a
 * crash leaves the database at a whole version. Refuses a database newer than this program.
 */
export function migrate(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number {
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].version === sorted[i - 1].version) throw new Error(`two migrations share version ${sorted[i].version}`);
  }
  const current = schemaVersion(db);
  const latest = latestVersion(sorted);
  if (current > latest) throw new DatabaseTooNewError(current, latest);
  for (const m of sorted) {
    if (m.version <= current) continue;
    db.transaction(() => {
      if (typeof m.up === 'string') db.exec(m.up);
      else m.up(db);
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
  return schemaVersion(db);
}
