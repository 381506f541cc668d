import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runPosd } from '../helpers/process.js';
import { backupDatabase, inspectBackupCopy, planIntegrityCheck } from '../../src/system/backup.js';

// The integrity check of a backup copy (src/system/backup.ts): one `PRAGMA integrity_check`, or the
// same check split over threads (planIntegrityCheck). Each way must refuse a damaged copy: a scribbled
// page (any check sees it) and an index that disagrees with its table (only the full check sees it;
// `quick_check` alone says ok, docs/operations.md says why the backup does not settle for it).

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

// One thread (the whole check on the caller's thread), two threads with a share on the caller's
// thread (`posd backup`), and two threads of their own (the nightly backup inside the daemon).
const MODES = [
  { name: 'whole, on the calling thread', checkThreads: 1, checkOffLoop: false },
  { name: 'split over two threads, one of them the calling thread', checkThreads: 2, checkOffLoop: false },
  { name: 'split over two threads of its own', checkThreads: 2, checkOffLoop: true },
];

describe('the integrity check of a backup copy', () => {
  it('splits a file of several similar tables into groups that together make the whole check', () => {
    const { file } = source();
    const db = new Database(file, { readonly: true });
    try {
      expect(planIntegrityCheck(db, 1)).toEqual([['integrity_check']]);
      const groups = planIntegrityCheck(db, 2);
      expect(groups).toHaveLength(2);
      const statements = groups.flat().sort();
      expect(statements).toEqual(
        ['quick_check', 'integrity_check("accounts")', 'integrity_check("events")', 'integrity_check("ledger")', 'integrity_check("sales")'].sort(),
      );
    } finally {
      db.close();
    }
  });

  it('checks a file whose one table is most of the work whole: its check cannot be split', () => {
    const { file } = source();
    const db = new Database(file);
    db.exec('DELETE FROM events; DELETE FROM ledger');
    try {
      expect(planIntegrityCheck(db, 4)).toEqual([['integrity_check']]);
    } finally {
      db.close();
    }
  });

  for (const mode of MODES) {
    it(`${mode.name}: a whole copy passes and restores every row`, async () => {
      const { dir, file } = source();
      const dest = join(dir, 'backup.db');
      await backupDatabase(file, dest, { checkThreads: mode.checkThreads, checkOffLoop: mode.checkOffLoop });
      expect(check(dest, 'integrity_check')).toBe('ok');
      const db = new Database(dest, { readonly: true });
      expect(db.prepare('SELECT count(*) FROM ledger').pluck().get()).toBe(ROWS);
      db.close();
    });

    it(`${mode.name}: a scribbled page fails the backup and leaves no file`, async () => {
      const { dir, file } = source();
      scribblePage(file, 'ledger');
      const dest = join(dir, 'backup.db');
      await expect(backupDatabase(file, dest, { checkThreads: mode.checkThreads, checkOffLoop: mode.checkOffLoop })).rejects.toThrow(
        /the backup failed its integrity check/,
      );
      expect(existsSync(dest)).toBe(false);
      expect(existsSync(`${dest}.partial`)).toBe(false);
    });

    it(`${mode.name}: an index that disagrees with its table fails the backup, where quick_check alone passes it`, async () => {
      const { dir, file } = source();
      skewIndex(file, 'events', 'kind', 'kind-001234', 'kind-991234');
      expect(check(file, 'quick_check')).toBe('ok');
      expect(check(file, 'integrity_check')).toMatch(/missing from index events_kind/);
      const dest = join(dir, 'backup.db');
      await expect(backupDatabase(file, dest, { checkThreads: mode.checkThreads, checkOffLoop: mode.checkOffLoop })).rejects.toThrow(
        /the backup failed its integrity check: integrity_check: .*events_kind/,
      );
      expect(existsSync(dest)).toBe(false);
      expect(existsSync(`${dest}.partial`)).toBe(false);
    });
  }

  it('reports every damaged table once when the check is split', async () => {
    const { file } = source();
    skewIndex(file, 'sales', 'code', 'code-000100', 'code-990100');
    skewIndex(file, 'ledger', 'source', 'src-000200', 'src-990200');
    const inspection = await inspectBackupCopy(file, { offLoop: true, threads: 2 });
    expect(inspection.ok).toBe(false);
    expect(inspection.problem).toMatch(/sales_code/);
    expect(inspection.problem).toMatch(/ledger_source/);
  });

  it('posd restore refuses a backup whose index disagrees with its table and changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'posd-backup-check-'));
    dirs.push(dir);
    const source = JSON.parse((await runPosd(['init', '--data', join(dir, 'src'), '--json'])).stdout);
    const file = join(dir, 'backup.db');
    expect((await runPosd(['backup', '--data', join(dir, 'src'), '--to', file])).code).toBe(0);
    const id: string = source.account_id;
    skewIndex(file, 'accounts', 'id', id, `${id.slice(0, -1)}${id.endsWith('z') ? 'y' : 'z'}`);
    expect(check(file, 'quick_check')).toBe('ok');
    const target = join(dir, 'target');
    const r = await runPosd(['restore', file, '--data', target]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cannot be restored: integrity_check: .*missing from index.*nothing was changed/);
    expect(existsSync(join(target, 'posd.db'))).toBe(false);
  });
});
