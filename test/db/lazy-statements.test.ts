import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareOnFirstUse, settleStatements } from '../../src/db/lazy-statements.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('statements compiled at their first use (issue 16)', () => {
  let dir: string;
  let db: Database.Database;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'posd-lazy-'));
  });
  afterEach(() => db?.close());
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const open = (name: string) => {
    db = new Database(join(dir, name));
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t (v) VALUES (\'a\'), (\'b\')');
    prepareOnFirstUse(db);
    return db;
  };

  it('answers as better-sqlite3 does, modes set before the first use included, and compiles once', () => {
    const db = open('one.db');
    const bad = db.prepare('SELECT nope FROM t');
    expect(bad.source).toBe('SELECT nope FROM t');
    expect(() => bad.get()).toThrow(/no such column: nope/);
    const values = db.prepare('SELECT v FROM t ORDER BY id').pluck();
    expect(values.all()).toEqual(['a', 'b']);
    expect(values.reader).toBe(true);
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    expect(insert.reader).toBe(false);
    expect(insert.run('c').changes).toBe(1);
    expect(db.prepare('SELECT id, v FROM t WHERE v = ?').raw().get('c')).toEqual([3, 'c']);
    expect([...db.prepare('SELECT v FROM t ORDER BY id').pluck().iterate()]).toEqual(['a', 'b', 'c']);
    // A mode changed after the first use applies to the compiled statement.
    expect(values.pluck(false).get()).toEqual({ v: 'a' });
  });

  it('the settle pass compiles what no one used and names the SQL that does not fit', async () => {
    const db = open('two.db');
    const used = db.prepare('SELECT count(*) FROM t').pluck();
    expect(used.get()).toBe(2);
    for (let i = 0; i < 60; i++) db.prepare(`SELECT v FROM t WHERE id = ${i}`);
    db.prepare('UPDATE missing SET x = 1');
    const settled = await settleStatements(db);
    expect(settled.made).toBe(60);
    expect(settled.failed).toEqual([{ sql: 'UPDATE missing SET x = 1', error: expect.stringMatching(/no such table: missing/) }]);
    // Asked again: the same pass, not a second one.
    expect(await settleStatements(db)).toBe(settled);
  });

  describe('a started daemon', () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer();
    });
    afterAll(() => s.stop());

    it('holds no statement whose SQL does not fit its database', async () => {
      const settled = await settleStatements(s.daemon.ctx.db);
      expect(settled.failed).toEqual([]);
      // The stores' statements, made at start and compiled by the pass rather than by a request.
      expect(settled.made).toBeGreaterThan(100);
    });
  });
});
