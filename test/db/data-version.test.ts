import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { dataVersionReader } from '../../src/db/data-version.js';

// `PRAGMA data_version` behind the WAL index's header (decision 0246): the pragma is asked only
// when the header moved, and every commit of another connection is still seen at the next call.

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function open(file: string): Db {
  const db = openDatabase(file, { migrate: false });
  dbs.push(db);
  return db;
}

function fileDb(): { file: string; db: Db } {
  const dir = mkdtempSync(join(tmpdir(), 'posd-dv-'));
  dirs.push(dir);
  const file = join(dir, 'posd.db');
  const db = open(file);
  db.exec('CREATE TABLE t (v INTEGER)');
  return { file, db };
}

/** The reader, and how many times it asked SQLite for the pragma. */
function counted(db: Db): { read: () => number; asked: () => number } {
  let asked = 0;
  const prepare = db.prepare.bind(db);
  const spy = vi.spyOn(db, 'prepare').mockImplementation((sql: string) => {
    const stmt = prepare(sql);
    const get = stmt.get.bind(stmt);
    stmt.get = ((...args: unknown[]) => {
      asked++;
      return get(...(args as []));
    }) as typeof stmt.get;
    return stmt;
  });
  const read = dataVersionReader(db);
  spy.mockRestore();
  return { read, asked: () => asked };
}

describe('the data version behind the WAL header', () => {
  test('another connection’s commit moves it at the next call, and nothing else asks SQLite', () => {
    const { file, db } = fileDb();
    const { read, asked } = counted(db);
    const first = read();
    for (let i = 0; i < 100; i++) expect(read()).toBe(first);
    expect(asked()).toBe(1);

    const other = open(file);
    other.prepare('INSERT INTO t VALUES (1)').run();
    const second = read();
    expect(second).not.toBe(first);
    expect(second).toBe(db.pragma('data_version', { simple: true }));
    expect(read()).toBe(second);
    expect(asked()).toBe(2);
  });

  test('its own commits ask again but keep the version, as the pragma does', () => {
    const { db } = fileDb();
    const { read, asked } = counted(db);
    const first = read();
    db.prepare('INSERT INTO t VALUES (2)').run();
    expect(read()).toBe(first);
    expect(asked()).toBe(2);
  });

  test('an in-memory connection asks the pragma every time', () => {
    const db = open(':memory:');
    const { read, asked } = counted(db);
    read();
    read();
    expect(asked()).toBe(2);
  });

  test('a second connection’s reader, closed and collected, leaves SQLite’s locks on the -shm file held', async () => {
    const { file, db } = fileDb();
    dataVersionReader(db)();
    const shm = statSync(`${file}-shm`);
    const held = () =>
      readFileSync('/proc/locks', 'utf8')
        .split('\n')
        .filter((line) => line.includes(' POSIX ') && line.split(/\s+/)[4] === String(process.pid) && line.split(/\s+/)[5]?.endsWith(`:${shm.ino}`)).length;
    expect(held()).toBeGreaterThan(0);
    const shmFds = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === `${file}-shm`;
        } catch {
          return false;
        }
      }).length;
    const before = shmFds();
    (() => {
      // Not kept in `dbs`: nothing holds it once closed, so a collection can free what it had.
      const other = openDatabase(file, { migrate: false });
      const read = dataVersionReader(other);
      read();
      other.close();
    })();
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    for (let i = 0; i < 3; i++) {
      gc();
      await new Promise((r) => setImmediate(r));
    }
    // Closing any descriptor of the file would have dropped them all (SIGBUS at the next process's open).
    expect(held()).toBeGreaterThan(0);
    // One descriptor per file, whatever number of connections read it.
    expect(shmFds()).toBe(before);
  });
});
