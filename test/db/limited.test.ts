import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { limitedAll } from '../../src/db/limited.js';

describe('limitedAll', () => {
  const db = openDatabase(':memory:', { migrate: false });
  db.exec('CREATE TABLE t (seq INTEGER PRIMARY KEY, k INTEGER NOT NULL)');
  const insert = db.prepare('INSERT INTO t (seq, k) VALUES (?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= 5000; i++) insert.run(i, i % 7);
  })();
  const bound = db.prepare('SELECT seq, k FROM t WHERE seq > ? ORDER BY seq LIMIT ?');
  const limited = limitedAll<[number], { seq: number; k: number }>(db, 'SELECT seq, k FROM t WHERE seq > ? ORDER BY seq LIMIT');

  it('answers what the same statement with a bound LIMIT answers, for limits on and off its steps and past them', () => {
    for (const limit of [1, 2, 15, 16, 17, 64, 100, 4096, 4097, 4999, 6000]) {
      for (const after of [0, 10, 4990]) expect(limited(limit, after)).toEqual(bound.all(after, limit));
    }
    expect(limited(0, 0)).toEqual([]);
  });

  it('refuses SQL that does not end with LIMIT', () => {
    expect(() => limitedAll(db, 'SELECT seq FROM t LIMIT 5')).toThrow(/must end with LIMIT/);
  });
});
