import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runPosd } from '../helpers/process.js';
import { backupDatabase, inspectBackupCopy, repairableIndexes } from '../../src/system/backup.js';

// The integrity check of a backup copy (src/system/backup.ts) is `PRAGMA quick_check`, on the
// calling thread or on a thread of its own: a scribbled page fails the backup. An index that
// disagrees with its table passes it (only the full check sees that; docs/operations.md says why the
// backup settles for quick_check); `posd restore` runs the full check and rebuilds such an index in
// the copy it restores, and still refuses a damaged page.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const PAGE = 4096;
const ROWS = 3000;

/** A WAL database of a few tables of similar size, each with an index, folded into its file. */
function source(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'posd-backup-check-'));
  dirs.push(dir);
  const file = join(dir, 'posd.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(`
    CREATE TABLE accounts (id TEXT PRIMARY KEY);
    INSERT INTO accounts VALUES ('acct_1');
    CREATE TABLE sales (id INTEGER PRIMARY KEY, code TEXT NOT NULL, note TEXT);
    CREATE INDEX sales_code ON sales (code);
    CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, data TEXT);
    CREATE INDEX events_kind ON events (kind);
    CREATE TABLE ledger (id INTEGER PRIMARY KEY, source TEXT NOT NULL, amount INTEGER NOT NULL);
    CREATE INDEX ledger_source ON ledger (source);
  `);
  db.transaction(() => {
    const sale = db.prepare('INSERT INTO sales (code, note) VALUES (?, ?)');
    const event = db.prepare('INSERT INTO events (kind, data) VALUES (?, ?)');
    const entry = db.prepare('INSERT INTO ledger (source, amount) VALUES (?, ?)');
    for (let i = 0; i < ROWS; i++) {
      const n = String(i).padStart(6, '0');
      sale.run(`code-${n}`, 'n'.repeat(60));
      event.run(`kind-${n}`, 'd'.repeat(60));
      entry.run(`src-${n}`, i);
    }
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { dir, file };
}

/** The pages of one b-tree (a table or an index) of a database file. */
function pagesOf(file: string, name: string): number[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT pageno FROM dbstat WHERE name = ? ORDER BY pageno').pluck().all(name) as number[];
  } finally {
    db.close();
  }
}

/** Overwrites a leaf page of `table` with junk. */
function scribblePage(file: string, table: string): void {
  const page = pagesOf(file, table).at(-1)!;
  const bytes = readFileSync(file);
  bytes.fill(0x5a, (page - 1) * PAGE, page * PAGE);
  writeFileSync(file, bytes);
}

/**
 * Changes one indexed value inside the table's own page, same length and type, so every page and
 * record stays well formed and only the index, which still holds the old value, disagrees. A page
 * can also hold stale bytes of a value in its free space: each place is tried until the table reads
 * the new value.
 */
function skewIndex(file: string, table: string, column: string, from: string, to: string): void {
  const original = readFileSync(file);
  for (const page of pagesOf(file, table)) {
    const start = (page - 1) * PAGE;
    for (let at = original.indexOf(from, start); at >= 0 && at < start + PAGE; at = original.indexOf(from, at + 1)) {
      const bytes = Buffer.from(original);
      bytes.write(to, at, 'latin1');
      writeFileSync(file, bytes);
      const db = new Database(file, { readonly: true });
      const found = db.prepare(`SELECT count(*) FROM ${table} NOT INDEXED WHERE ${column} = ?`).pluck().get(to);
      db.close();
      if (found === 1) return;
    }
  }
  writeFileSync(file, original);
  throw new Error(`${from} not found in ${table}`);
}

function check(file: string, pragma: string): string {
  const db = new Database(file, { readonly: true });
  try {
    return (db.pragma(pragma) as Array<Record<string, string>>).map((r) => Object.values(r)[0]).join('; ');
  } finally {
    db.close();
  }
}

// The whole check on the caller's thread (`posd backup`) and on a thread of its own (the nightly
// backup inside the daemon).
const MODES = [
  { name: 'on the calling thread', checkOffLoop: false },
  { name: 'on a thread of its own', checkOffLoop: true },
];

describe('the integrity check of a backup copy', () => {
  for (const mode of MODES) {
    it(`${mode.name}: a whole copy passes and restores every row`, async () => {
      const { dir, file } = source();
      const dest = join(dir, 'backup.db');
      const result = await backupDatabase(file, dest, { checkOffLoop: mode.checkOffLoop });
      expect(check(dest, 'integrity_check')).toBe('ok');
      expect(existsSync(`${dest}-wal`)).toBe(false);
      const db = new Database(dest, { readonly: true });
      expect(db.pragma('journal_mode', { simple: true })).toBe('delete');
      expect(db.prepare('SELECT count(*) FROM ledger').pluck().get()).toBe(ROWS);
      db.close();
      expect(Object.keys(result.phases)).toEqual(['copy', 'fold', 'bundle', 'check', 'flush', 'rename', 'dir_fsync']);
    });

    it(`${mode.name}: a scribbled page fails the backup and leaves no file`, async () => {
      const { dir, file } = source();
      scribblePage(file, 'ledger');
      const dest = join(dir, 'backup.db');
      await expect(backupDatabase(file, dest, { checkOffLoop: mode.checkOffLoop })).rejects.toThrow(
        // quick_check reports the page, or stops at it as malformed
        /the backup failed its integrity check: (quick_check: |cannot check .*malformed)/,
      );
      expect(existsSync(dest)).toBe(false);
      expect(existsSync(`${dest}.partial`)).toBe(false);
    });

    it(`${mode.name}: an index that disagrees with its table passes the backup (quick_check), the full check still sees it`, async () => {
      const { dir, file } = source();
      skewIndex(file, 'events', 'kind', 'kind-001234', 'kind-991234');
      expect(check(file, 'quick_check')).toBe('ok');
      expect(check(file, 'integrity_check')).toMatch(/missing from index events_kind/);
      const dest = join(dir, 'backup.db');
      await backupDatabase(file, dest, { checkOffLoop: mode.checkOffLoop });
      expect(check(dest, 'integrity_check')).toMatch(/missing from index events_kind/);
    });
  }

  it('folds a WAL that holds commits into the backup, which opens without one', async () => {
    const { dir, file } = source();
    const db = new Database(file);
    db.pragma('wal_autocheckpoint = 0');
    db.prepare('INSERT INTO ledger (source, amount) VALUES (?, ?)').run('src-in-wal', 7);
    const dest = join(dir, 'backup.db');
    try {
      await backupDatabase(file, dest);
    } finally {
      db.close();
    }
    expect(existsSync(`${dest}-wal`)).toBe(false);
    expect(check(dest, 'integrity_check')).toBe('ok');
    const copy = new Database(dest, { readonly: true });
    expect(copy.pragma('journal_mode', { simple: true })).toBe('delete');
    expect(copy.prepare("SELECT amount FROM ledger WHERE source = 'src-in-wal'").pluck().get()).toBe(7);
    copy.close();
  });

  it('tells an index that disagrees with its table from damage no rebuild repairs', async () => {
    expect(repairableIndexes(['row 12 missing from index a_b', 'wrong # of entries in index a_b', 'row 3 missing from index c'])).toEqual(['a_b', 'c']);
    expect(repairableIndexes(['row 12 missing from index a_b', 'non-unique entry in index c'])).toBeNull();
    expect(repairableIndexes(['*** in database main ***\nTree 5 page 5: btreeInitPage() returns error code 11'])).toBeNull();
    expect(repairableIndexes(['NULL value in sales.code'])).toBeNull();
    expect(repairableIndexes([])).toBeNull();
    const { file } = source();
    skewIndex(file, 'sales', 'code', 'code-000100', 'code-990100');
    expect((await inspectBackupCopy(file, { offLoop: true })).ok).toBe(true);
  });

  it('posd backup takes a store whose index disagrees with its table; posd restore rebuilds the index and restores a whole box', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'posd-backup-check-'));
    dirs.push(dir);
    const data = join(dir, 'src');
    const init = JSON.parse((await runPosd(['init', '--data', data, '--json'])).stdout);
    const id: string = init.account_id;
    const skewed = `${id.slice(0, -1)}${id.endsWith('z') ? 'y' : 'z'}`;
    skewIndex(join(data, 'posd.db'), 'accounts', 'id', id, skewed);
    expect(check(join(data, 'posd.db'), 'quick_check')).toBe('ok');
    const file = join(dir, 'backup.db');
    const b = await runPosd(['backup', '--data', data, '--to', file]);
    expect(b.stderr).toBe('');
    expect(b.code).toBe(0);
    const before = readFileSync(file);
    expect(check(file, 'integrity_check')).toMatch(/missing from index sqlite_autoindex_accounts_1/);
    const target = join(dir, 'target');
    const r = await runPosd(['restore', file, '--data', target, '--recovery-key-file', '-'], {}, init.recovery_key);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\n {2}rebuilt from their tables \(they disagreed with them in the backup\): sqlite_autoindex_accounts_1\n/);
    const restored = join(target, 'posd.db');
    expect(check(restored, 'integrity_check')).toBe('ok');
    const db = new Database(restored, { readonly: true });
    try {
      expect(db.prepare('SELECT id FROM accounts INDEXED BY sqlite_autoindex_accounts_1 WHERE id = ?').pluck().get(skewed)).toBe(skewed);
    } finally {
      db.close();
    }
    // The user's backup file is never changed.
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(join(target, 'posd.db.restoring'))).toBe(false);
  });

  it('posd restore refuses a backup with a scribbled page and changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'posd-backup-check-'));
    dirs.push(dir);
    const data = join(dir, 'src');
    expect((await runPosd(['init', '--data', data])).code).toBe(0);
    const file = join(dir, 'backup.db');
    expect((await runPosd(['backup', '--data', data, '--to', file])).code).toBe(0);
    scribblePage(file, 'accounts');
    expect(() => check(file, 'integrity_check')).toThrow(/malformed/);
    const target = join(dir, 'target');
    const r = await runPosd(['restore', file, '--data', target]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cannot be restored: .*nothing was changed/);
    expect(existsSync(join(target, 'posd.db'))).toBe(false);
    expect(existsSync(join(target, 'posd.db.restoring'))).toBe(false);
  });
});
