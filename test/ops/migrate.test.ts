import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import {
  BASELINE_VERSION,
  DatabaseTooNewError,
  DevelopmentDatabaseError,
  NotPosdDatabaseError,
  POSD_APPLICATION_ID,
  baselineSchema,
  latestVersion,
  migrate,
  schemaVersion,
  type Migration,
} from '../../src/db/migrate.js';
import { MIGRATIONS } from '../../src/db/migrations/index.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'posd-migrate-'));
  file = join(dir, 'posd.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A database file as the migrations left it, without running them (WAL, as posd opens it). */
function raw(): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  return db;
}

const objects = (db: Database.Database) => db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").all();

describe('a new database gets the baseline', () => {
  it('at user_version 100 and posd application_id, with its starting rows, in one step', () => {
    const db = openDatabase(file);
    try {
      expect(BASELINE_VERSION).toBe(100);
      expect(schemaVersion(db)).toBe(BASELINE_VERSION);
      expect(db.pragma('application_id', { simple: true })).toBe(POSD_APPLICATION_ID);
      // No numbered migration yet: the baseline is the whole schema.
      expect(MIGRATIONS).toEqual([]);
      expect(latestVersion()).toBe(BASELINE_VERSION);
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
      expect(tables).toEqual(
        expect.arrayContaining(['accounts', 'events', 'balance_transactions', 'terminal_commands', 'webhook_deliveries', 'sync_feed', 'sched_bookings']),
      );
      // The lists' row counters (issue 38), keys published to the feed, and the per-store outcome
      // counters of sync_stores (issue 19).
      expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name").pluck().all()).toEqual([
        'balance_transactions_count_delete',
        'balance_transactions_count_insert',
        'checkouts_count_delete',
        'checkouts_count_insert',
        'checkouts_count_update',
        'contract_templates_count_delete',
        'contract_templates_count_insert',
        'contract_templates_count_update',
        'contracts_count_delete',
        'contracts_count_insert',
        'contracts_count_update',
        'customers_count_delete',
        'customers_count_insert',
        'customers_count_update',
        'events_count_delete',
        'events_count_insert',
        'intents_count_delete',
        'intents_count_insert',
        'intents_count_update',
        'products_count_delete',
        'products_count_insert',
        'products_count_update',
        'sched_bookings_count_delete',
        'sched_bookings_count_insert',
        'sched_bookings_count_update',
        'subscriptions_count_delete',
        'subscriptions_count_insert',
        'subscriptions_count_update',
        'swaps_count_delete',
        'swaps_count_insert',
        'swaps_count_update',
        'sync_feed_key_insert',
        'sync_feed_key_revoke',
        'sync_received_count_delete',
        'sync_received_count_insert',
        'sync_received_count_update',
        'terminal_commands_count_delete',
        'terminal_commands_count_insert',
        'terminal_commands_count_update',
        'transfers_count_delete',
        'transfers_count_insert',
        'transfers_count_update',
        'users_count_delete',
        'users_count_insert',
        'users_count_update',
        'webhook_deliveries_count_delete',
        'webhook_deliveries_count_insert',
      ]);
      expect(db.prepare('SELECT id, seq FROM webhook_cursor').all()).toEqual([{ id: 1, seq: 0 }]);
      const key = db.prepare('SELECT key FROM webhook_delivery_ids_key WHERE id = 1').pluck().get() as Buffer;
      expect(key).toHaveLength(32);
      // Every table STRICT: the baseline is checked by the same rules as the code that writes it.
      const loose = db
        .prepare("SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND strict = 0 AND name NOT LIKE 'sqlite_%'")
        .pluck()
        .all();
      expect(loose).toEqual([]);
    } finally {
      db.close();
    }
  });

  it('is read beside the module: the sources under the test runner', () => {
    expect(baselineSchema()).toBe(readFileSync(new URL('../../src/db/baseline.sql', import.meta.url), 'utf8'));
  });

  it('reopening changes nothing: the random key and the schema stay as they were', () => {
    const first = openDatabase(file);
    const key = first.prepare('SELECT key FROM webhook_delivery_ids_key').pluck().get();
    const before = objects(first);
    first.close();
    const again = openDatabase(file);
    try {
      expect(schemaVersion(again)).toBe(BASELINE_VERSION);
      expect(again.prepare('SELECT key FROM webhook_delivery_ids_key').pluck().get()).toEqual(key);
      expect(objects(again)).toEqual(before);
    } finally {
      again.close();
    }
  });

  it('a failing baseline leaves the database empty at version 0', () => {
    const broken = raw();
    // The baseline's webhook key is made half-way through its text: fail there.
    broken.function('randomblob', (_bytes: unknown) => {
      throw new Error('no randomness');
    });
    try {
      expect(() => migrate(broken)).toThrow(/no randomness/);
      expect(schemaVersion(broken)).toBe(0);
      expect(broken.pragma('application_id', { simple: true })).toBe(0);
      expect(objects(broken)).toEqual([]);
    } finally {
      broken.close();
    }
  });
});

describe('numbered migrations after the baseline', () => {
  const addNote: Migration = { version: 101, name: 'customer-note', up: 'ALTER TABLE customers ADD COLUMN note TEXT;' };

  it('run once each, above the database version, keeping the rows', () => {
    const db = openDatabase(file);
    db.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('org_1', 'Tienda', '2026-01-01T00:00:00.000Z')").run();
    db.close();

    const upgraded = openDatabase(file, { migrate: false });
    try {
      expect(migrate(upgraded, [addNote])).toBe(101);
      expect(upgraded.prepare("SELECT name FROM pragma_table_info('customers') WHERE name = 'note'").pluck().get()).toBe('note');
      expect(upgraded.prepare('SELECT name FROM organizations').pluck().all()).toEqual(['Tienda']);
      // Run again, the ALTER would fail: applied versions are skipped.
      expect(migrate(upgraded, [addNote])).toBe(101);
      expect(latestVersion([addNote])).toBe(101);
    } finally {
      upgraded.close();
    }
  });

  it('a new database gets the baseline and then every migration', () => {
    const db = openDatabase(file, { migrate: false });
    try {
      expect(migrate(db, [addNote, { version: 102, name: 'noop', up: (d) => d.exec('CREATE INDEX customers_note ON customers(note)') }])).toBe(102);
      expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'customers_note'").pluck().get()).toBe('customers_note');
    } finally {
      db.close();
    }
  });

  it('a failing migration changes nothing and leaves the version where it was', () => {
    const db = openDatabase(file);
    try {
      const failing: Migration = { version: 102, name: 'fails', up: 'CREATE TABLE half (v TEXT) STRICT; INSERT INTO nowhere VALUES (1);' };
      expect(() => migrate(db, [addNote, failing])).toThrow(/no such table: nowhere/);
      expect(schemaVersion(db)).toBe(101);
      expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'half'").pluck().get()).toBe(0);
    } finally {
      db.close();
    }
  });

  it('must be numbered above the baseline, each version once', () => {
    const db = openDatabase(file, { migrate: false });
    try {
      expect(() => migrate(db, [{ version: 99, name: 'old', up: '' }])).toThrow(/not above the baseline's 100/);
      expect(() => migrate(db, [addNote, { ...addNote, name: 'again' }])).toThrow(/two migrations share version 101/);
      expect(schemaVersion(db)).toBe(0);
    } finally {
      db.close();
    }
  });
});

describe('databases this posd refuses, unchanged', () => {
  it('one made by a development build before 0.1 (versions 1 to 99, no application id)', () => {
    for (const version of [2, 99, 100]) {
      rmSync(file, { force: true });
      const old = raw();
      old.exec('CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT');
      old.pragma(`user_version = ${version}`);
      const before = objects(old);
      old.close();
      const err = (() => {
        try {
          openDatabase(file);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(DevelopmentDatabaseError);
      expect((err as Error).message).toBe(`the data folder ${dir} was made by a development build of posd before 0.1; move it away and run posd init`);
      const after = new Database(file, { readonly: true });
      expect(after.pragma('user_version', { simple: true })).toBe(version);
      expect(objects(after)).toEqual(before);
      after.close();
    }
  });

  it('one newer than this posd', () => {
    const db = openDatabase(file);
    db.pragma('user_version = 105');
    db.close();
    expect(() => openDatabase(file)).toThrow(DatabaseTooNewError);
    const after = new Database(file, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(105);
    after.close();
  });

  it('a file with tables of something else', () => {
    const other = raw();
    other.exec('CREATE TABLE notes (v TEXT)');
    other.close();
    expect(() => openDatabase(file)).toThrow(NotPosdDatabaseError);
    const after = new Database(file, { readonly: true });
    expect(objects(after)).toEqual([{ type: 'table', name: 'notes', sql: 'CREATE TABLE notes (v TEXT)' }]);
    expect(after.pragma('application_id', { simple: true })).toBe(0);
    after.close();
  });
});
