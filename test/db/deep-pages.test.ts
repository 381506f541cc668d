import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { deepPage, deepPageReads } from '../../src/db/deep-pages.js';

// Deep pages (decision 0310): whichever way a page is read (its offset, from a remembered start,
// from the other end), it holds exactly the rows of the list's own OFFSET statement, also after
// writes by this connection or another.

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const ROWS = 3000;

function fixture(): { file: string; db: Db } {
  const dir = mkdtempSync(join(tmpdir(), 'posd-deep-'));
  dirs.push(dir);
  const file = join(dir, 'posd.db');
  const db = openDatabase(file, { migrate: false });
  dbs.push(db);
  db.exec(`CREATE TABLE t (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, acct TEXT NOT NULL, other TEXT, created_at TEXT NOT NULL);
    CREATE INDEX t_acct ON t (acct, created_at, id);
    CREATE INDEX t_other ON t (other, created_at, id);`);
  // Three rows a second, so the order's tie-break (id) matters; one account in four is another.
  const insert = db.prepare('INSERT INTO t (id, acct, other, created_at) VALUES (?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < ROWS; i++) {
      const at = new Date(Date.UTC(2026, 0, 1) + Math.floor(i / 3) * 1000).toISOString();
      insert.run(`r${String(i).padStart(5, '0')}`, i % 4 ? 'a' : 'b', i % 4 ? null : 'a', at);
    }
  })();
  return { file, db };
}

const POSITIONAL = 'SELECT * FROM t WHERE acct = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?';
const NAMED = 'SELECT * FROM t WHERE acct = @acct ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset';
const BY_SEQ = 'SELECT * FROM t WHERE acct = ? OR other = ? ORDER BY seq DESC LIMIT ? OFFSET ?';
const MERGED =
  'SELECT * FROM t WHERE acct = @acct UNION ALL SELECT * FROM t WHERE other = @acct AND acct <> @acct ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset';

const ids = (rows: unknown[]) => rows.map((r) => (r as { id: string }).id);

describe('deep pages', () => {
  test('every page, however read, is the OFFSET statement’s page', () => {
    const { db } = fixture();
    const cases = [
      { sql: POSITIONAL, args: ['a'], plain: (l: number, o: number) => db.prepare(POSITIONAL).all('a', l, o) },
      { sql: NAMED, args: { acct: 'a' }, plain: (l: number, o: number) => db.prepare(NAMED).all({ acct: 'a', limit: l, offset: o }) },
      { sql: BY_SEQ, args: ['b', 'x'], plain: (l: number, o: number) => db.prepare(BY_SEQ).all('b', 'x', l, o) },
      { sql: MERGED, args: { acct: 'a' }, plain: (l: number, o: number) => db.prepare(MERGED).all({ acct: 'a', limit: l, offset: o }) },
    ];
    const before = { ...deepPageReads };
    for (const c of cases) {
      const total = c.plain(100_000, 0).length;
      expect(total).toBeGreaterThan(700);
      const count = () => total;
      // Pages jumped to, pages walked one after the other, the last ones, past the end.
      const offsets = [1, 9, 500, 510, 520, 530, total - 25, total - 10, total - 3, total, total + 40, 700, 690, 680, 600, 250];
      for (const limit of [10, 7]) {
        for (const offset of offsets) {
          for (const withCount of [true, false]) {
            const got = deepPage(db, c.sql, c.args, limit, offset, withCount ? count : undefined);
            expect(ids(got!.rows), `${c.sql} ${limit}@${offset}`).toEqual(ids(c.plain(limit, offset)));
            if (withCount) expect(got!.total).toBe(total);
          }
        }
      }
    }
    // Every way was taken, for every form of statement between them.
    for (const way of ['offset', 'on', 'back', 'end'] as const) expect(deepPageReads[way] - before[way], way).toBeGreaterThanOrEqual(4);
  });

  test('a walk page after page reads each from where the last ended, and a write anywhere forgets it', () => {
    const { file, db } = fixture();
    const plain = (o: number) => ids(db.prepare(POSITIONAL).all('a', 10, o));
    const before = { ...deepPageReads };
    for (let o = 1000; o < 1100; o += 10) expect(ids(deepPage(db, POSITIONAL, ['a'], 10, o)!.rows)).toEqual(plain(o));
    // The first page of the walk by its offset, the nine after it from the remembered starts.
    expect(deepPageReads.offset - before.offset).toBe(1);
    expect(deepPageReads.on - before.on).toBe(9);
    // A page further on, then back by `prev` links: each read back from the first row of the one after.
    expect(ids(deepPage(db, POSITIONAL, ['a'], 10, 1500)!.rows)).toEqual(plain(1500));
    for (let o = 1490; o >= 1410; o -= 10) expect(ids(deepPage(db, POSITIONAL, ['a'], 10, o)!.rows)).toEqual(plain(o));
    expect(deepPageReads.back - before.back).toBe(9);
    expect(deepPageReads.offset - before.offset).toBe(1);
    // A new row at the head shifts every page by one: what was remembered must not be used.
    db.prepare('INSERT INTO t (id, acct, created_at) VALUES (?, ?, ?)').run('z-new', 'a', '2027-01-01T00:00:00.000Z');
    expect(ids(deepPage(db, POSITIONAL, ['a'], 10, 1100)!.rows)).toEqual(plain(1100));
    expect(ids(deepPage(db, POSITIONAL, ['a'], 10, 1110)!.rows)).toEqual(plain(1110));
    // Another connection's commit (another process would do the same) is seen as well.
    const other = openDatabase(file, { migrate: false });
    dbs.push(other);
    other.prepare('DELETE FROM t WHERE id = ?').run('r00001');
    expect(ids(deepPage(db, POSITIONAL, ['a'], 10, 1120)!.rows)).toEqual(plain(1120));
    // An update that takes a row out of the list (here: to another account) as well.
    db.prepare("UPDATE t SET acct = 'b' WHERE id = ?").run('r00002');
    expect(ids(deepPage(db, POSITIONAL, ['a'], 10, 1130)!.rows)).toEqual(plain(1130));
  });

  test('a page in the older half is read from the other end; the same page asked again from its start', () => {
    const { db } = fixture();
    const total = (db.prepare("SELECT count(*) AS n FROM t WHERE acct = 'a'").get() as { n: number }).n;
    const before = { ...deepPageReads };
    const last = deepPage(db, POSITIONAL, ['a'], 10, total - 10, () => total)!;
    expect(ids(last.rows)).toEqual(ids(db.prepare(POSITIONAL).all('a', 10, total - 10)));
    expect(deepPageReads.end - before.end).toBe(1);
    deepPage(db, POSITIONAL, ['a'], 10, 1200);
    const again = deepPage(db, POSITIONAL, ['a'], 10, 1200)!;
    expect(ids(again.rows)).toEqual(ids(db.prepare(POSITIONAL).all('a', 10, 1200)));
    expect(deepPageReads.on - before.on).toBe(1);
  });

  test('a statement of another shape is left to its caller', () => {
    const { db } = fixture();
    expect(deepPage(db, 'SELECT * FROM t WHERE acct = ? ORDER BY created_at, id LIMIT ? OFFSET ?', ['a'], 10, 1500)).toBeUndefined();
    expect(deepPage(db, 'SELECT * FROM t WHERE acct = ? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?', ['a'], 10, 1500)).toBeUndefined();
  });
});
