import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, tx } from '../../src/db/database.js';
import { latestVersion, migrate, schemaVersion } from '../../src/db/migrate.js';
import { MIGRATIONS } from '../../src/db/migrations/index.js';
import { AccountsService, initInstallation } from '../../src/accounts/service.js';
import { Outbox } from '../../src/outbox/events.js';
import { appendSyncRecord } from '../../src/outbox/sync-records.js';
import { ManualClock } from '../../src/clock.js';
import { runPosd, spawnDaemon } from '../helpers/process.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('upgrades keep the data', () => {
  it('a database made by the foundation-only posd opens with every migration and keeps its rows', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-upgrade-'));
    const file = join(dir, 'posd.db');
    const clock = new ManualClock();
    const old = new Database(file);
    old.pragma('journal_mode = WAL');
    expect(migrate(old, MIGRATIONS.filter((m) => m.version <= 2))).toBe(2);
    const accounts = new AccountsService(old, clock);
    const inst = initInstallation(accounts, { name: 'Tienda vieja', role: 'store', country: 'GT', defaultCurrency: 'GTQ' });
    const outbox = new Outbox(old, clock);
    tx(old, () => {
      outbox.emit({ type: 'account.updated', accountId: inst.account_id, liveMode: true, payload: { name: 'Tienda vieja' }, objectId: inst.account_id });
      appendSyncRecord(old, { kind: 'cash_sale', accountId: inst.account_id, liveMode: true, payload: { amount_in_cents: 4200 }, createdAt: '2026-01-01T00:00:00.000Z' });
    });
    const dump = (db: Database.Database) =>
      ['organizations', 'accounts', 'api_keys', 'events', 'sync_outbox'].map((t) => db.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all());
    const before = dump(old);
    old.close();

    const db = openDatabase(file); // the whole list
    try {
      expect(schemaVersion(db)).toBe(latestVersion());
      expect(latestVersion()).toBeGreaterThan(2);
      expect(dump(db)).toEqual(before);
      // The keys made by the old version still authenticate.
      const now = new AccountsService(db, clock);
      expect(now.accounts().map((a) => a.id)).toContain(inst.account_id);
    } finally {
      db.close();
    }
    // And the daemon serves them.
    const r = await runPosd(['keys', 'list', '--data', dir, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(2);
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
