import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { BASELINE_VERSION, POSD_APPLICATION_ID, baselineSchema, latestVersion } from '../../src/db/migrate.js';
import { runPosd, spawnDaemon } from '../helpers/process.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the schema of a data folder', () => {
  it('posd init makes the database from the baseline the build carries', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-upgrade-'));
    // The build copies baseline.sql beside dist/src/db/migrate.js, where the built posd reads it.
    expect(readFileSync(new URL('../../dist/src/db/baseline.sql', import.meta.url), 'utf8')).toBe(baselineSchema());
    const r = await runPosd(['init', '--data', dir, '--json']);
    expect(r.code).toBe(0);
    const made = new Database(join(dir, 'posd.db'), { readonly: true });
    const expected = openDatabase(':memory:');
    try {
      expect(made.pragma('user_version', { simple: true })).toBe(BASELINE_VERSION);
      expect(made.pragma('application_id', { simple: true })).toBe(POSD_APPLICATION_ID);
      const schema = (db: Database.Database) => db.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY name').all();
      expect(schema(made)).toEqual(schema(expected));
    } finally {
      made.close();
      expected.close();
    }
  });

  it('posd serve refuses a data folder made by a development build with one line and exit code 2, leaving it untouched', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-upgrade-'));
    const file = join(dir, 'posd.db');
    // What the builds before 0.1 left: their migrations' tables at version 99, no application id.
    const old = new Database(file);
    old.pragma('journal_mode = WAL');
    old.exec('CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT');
    old.pragma('user_version = 99');
    old.close();
    const daemon = spawnDaemon(['--data', dir, '--port', '0']);
    const { code } = await daemon.exited;
    expect(code).toBe(2);
    expect(daemon.stderr()).toBe(`posd: the data folder ${dir} was made by a development build of posd before 0.1; move it away and run posd init\n`);
    expect(daemon.stdout()).toBe('');
    const after = new Database(file, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(99);
    expect(after.prepare('SELECT name FROM sqlite_master').pluck().all()).toEqual(['meta', 'sqlite_autoindex_meta_1']);
    after.close();
    const doctor = await runPosd(['doctor', '--data', dir, '--json']);
    const report = JSON.parse(doctor.stdout);
    expect(report.checks.find((c: { name: string }) => c.name === 'daemon').detail).toBe('not running');
    expect(report.checks.find((c: { name: string }) => c.name === 'schema version')).toMatchObject({
      ok: false,
      detail: '99, made by a development build of posd before 0.1',
      fix: `move ${dir} away and run posd init`,
    });
    expect(doctor.code).toBe(1);
  });

  it('posd serve refuses a database newer than itself with one line and exit code 2, leaving it untouched', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-upgrade-'));
    const file = join(dir, 'posd.db');
    const db = openDatabase(file);
    db.pragma(`user_version = ${latestVersion() + 5}`);
    db.close();
    const daemon = spawnDaemon(['--data', dir, '--port', '0']);
    const { code } = await daemon.exited;
    expect(code).toBe(2);
    const lines = daemon.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `posd: the database is at schema version ${latestVersion() + 5}, newer than this posd understands (${latestVersion()}); ` +
        'run the newer posd that wrote it, or restore a backup made by this version',
    );
    expect(daemon.stdout()).toBe('');
    const after = new Database(file, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(latestVersion() + 5);
    after.close();
    // The refused start released the data folder: nothing claims to be running.
    const doctor = await runPosd(['doctor', '--data', dir, '--json']);
    const report = JSON.parse(doctor.stdout);
    expect(report.checks.find((c: { name: string }) => c.name === 'daemon').detail).toBe('not running');
    expect(report.checks.find((c: { name: string }) => c.name === 'schema version')).toMatchObject({ ok: false });
    expect(doctor.code).toBe(1);
  });
});
