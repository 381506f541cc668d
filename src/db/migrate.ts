import type Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { MIGRATIONS } from './migrations/index.js';

export interface Migration {
  /** Above BASELINE_VERSION and strictly increasing; stored in `PRAGMA user_version` once applied. */
  version: number;
  name: string;
  up: string | ((db: Database.Database) => void);
}

/**
 * The `user_version` of a database made from `baseline.sql`. Above every version the development
 * builds before 0.1 wrote (their migrations ran 1 to 99), so a number seen in a log, the status
 * page or `posd doctor` says which schema it is; numbered migrations go on from 101.
 */
export const BASELINE_VERSION = 100;

/**
 * `PRAGMA application_id` of a posd database ("posd" in ASCII), set with the baseline. The
 * development builds before 0.1 never set it: a database with a schema version and without it was
 * made by one of them, whatever its version.
 */
export const POSD_APPLICATION_ID = 0x706f7364;

/** A database this posd will not run; the message is the one line to show, saying what to do. */
export class DatabaseRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

export class DatabaseTooNewError extends DatabaseRefusedError {
  constructor(
    readonly found: number,
    readonly supported: number,
  ) {
    super(
      `the database is at schema version ${found}, newer than this posd understands (${supported}); ` +
        'run the newer posd that wrote it, or restore a backup made by this version',
    );
  }
}

/** No box in the field runs a development build, so there is nothing to carry over: start anew. */
export class DevelopmentDatabaseError extends DatabaseRefusedError {
  constructor(readonly dataDir: string) {
    super(`the data folder ${dataDir} was made by a development build of posd before 0.1; move it away and run posd init`);
  }
}

export class NotPosdDatabaseError extends DatabaseRefusedError {
  constructor(readonly file: string) {
    super(`${file} holds tables but is not a posd database; point --data at another folder`);
  }
}

export function latestVersion(migrations: readonly Migration[] = MIGRATIONS): number {
  return migrations.reduce((max, m) => Math.max(max, m.version), BASELINE_VERSION);
}

export function schemaVersion(db: Database.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/** Made by a development build before 0.1 (see POSD_APPLICATION_ID): never opened, never migrated. */
export function madeByDevelopmentBuild(db: Database.Database): boolean {
  const version = schemaVersion(db);
  return version > 0 && (version < BASELINE_VERSION || db.pragma('application_id', { simple: true }) !== POSD_APPLICATION_ID);
}

let baselineSql: string | undefined;

/**
 * The baseline's text. Read beside this module: `src/db/` under the test runner, `dist/src/db/`
 * from the build, which copies it there (package.json `build`).
 */
export function baselineSchema(): string {
  return (baselineSql ??= readFileSync(new URL('./baseline.sql', import.meta.url), 'utf8'));
}

/**
 * Brings the database to this program's schema. A new database (user_version 0, no tables) gets
 * the baseline; then each numbered migration above its version runs. Each step runs in its own
 * transaction together with its version bump, so a crash leaves the database at a whole version.
 * Refuses, changing nothing, a database made by a development build, one newer than this program,
 * and a file that holds tables of something else.
 */
export function migrate(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number {
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  for (let i = 0; i < sorted.length; i++) {
    if (sorted[i].version <= BASELINE_VERSION)
      throw new Error(`migration ${sorted[i].name} has version ${sorted[i].version}, not above the baseline's ${BASELINE_VERSION}`);
    if (i > 0 && sorted[i].version === sorted[i - 1].version) throw new Error(`two migrations share version ${sorted[i].version}`);
  }
  const current = schemaVersion(db);
  if (current === 0) {
    db.transaction(() => {
      // Read again under the write lock: another process may have just made this database.
      if (schemaVersion(db) !== 0) return;
      const tables = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number };
      if (tables.n > 0) throw new NotPosdDatabaseError(db.name);
      db.exec(baselineSchema());
      db.pragma(`application_id = ${POSD_APPLICATION_ID}`);
      db.pragma(`user_version = ${BASELINE_VERSION}`);
    }).immediate();
  }
  if (madeByDevelopmentBuild(db)) throw new DevelopmentDatabaseError(dirname(db.name));
  const from = schemaVersion(db);
  const latest = latestVersion(sorted);
  if (from > latest) throw new DatabaseTooNewError(from, latest);
  for (const m of sorted) {
    if (m.version <= from) continue;
    db.transaction(() => {
      if (typeof m.up === 'string') db.exec(m.up);
      else m.up(db);
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
  return schemaVersion(db);
}
