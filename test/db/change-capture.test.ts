import { describe, expect, test } from 'vitest';
import { openDatabase, setCommitGate, tx, type Db } from '../../src/db/database.js';
import {
  ensureLogState,
  replayEntries,
  pendingEntries,
  queueEntry,
  undoPending,
  logPosition,
  replayChanges,
  setLogPosition,
  snapshotChanges,
  startCapture,
  stopCapture,
  takeChanges,
  type RowChange,
} from '../../src/db/change-capture.js';

// The central's one log at the SQLite end (docs/central.md, "One log"): what a leader's connection
// captures is what a standby's replay needs to hold the same rows, for rowid tables, WITHOUT ROWID
// tables, blobs, deletes and key changes; a commit gate that throws rolls the transaction back.

const dump = (db: Db, table: string) => db.prepare(`SELECT rowid AS r, * FROM "${table}" ORDER BY 1`).all();
const dumpNoRowid = (db: Db, table: string) => db.prepare(`SELECT * FROM "${table}" ORDER BY 1, 2`).all();

function pair(): { leader: Db; standby: Db } {
  return { leader: openDatabase(':memory:'), standby: openDatabase(':memory:') };
}

function ship(leader: Db, standby: Db): number {
  let shipped = 0;
  const taken = takeChanges(leader);
  if (taken) {
    tx(standby, () => {
      standby.pragma('defer_foreign_keys = ON');
      replayChanges(standby, JSON.parse(taken.json) as RowChange[]);
    });
    shipped = taken.count;
  }
  return shipped;
}

describe('change capture and replay', () => {
  test('a standby replaying what the leader captured holds the same rows, table for table', () => {
    const { leader, standby } = pair();
    // The standby starts from the leader's snapshot (its own baseline rows differ: a random blob key).
    startCapture(leader);
    takeChanges(leader);
    tx(standby, () => {
      standby.pragma('defer_foreign_keys = ON');
      replayChanges(standby, snapshotChanges(leader));
    });
    expect(dump(standby, 'webhook_delivery_ids_key')).toEqual(dump(leader, 'webhook_delivery_ids_key'));

    tx(leader, () => {
      leader.prepare("INSERT INTO meta (key, value) VALUES ('a', '1'), ('b', '2')").run();
      leader.prepare("UPDATE meta SET value = 'changed' WHERE key = 'a'").run();
      leader.prepare("DELETE FROM meta WHERE key = 'b'").run();
      // A primary key changed in place: the old key is deleted at the standby.
      leader.prepare("UPDATE meta SET key = 'c' WHERE key = 'a'").run();
    });
    // One change per key: 'a' and 'b' were made and gone in the entry, only 'c' is left of it.
    expect(ship(leader, standby)).toBe(1);
    expect(dump(standby, 'meta')).toEqual(dump(leader, 'meta'));
    expect(standby.prepare("SELECT value FROM meta WHERE key = 'c'").pluck().get()).toBe('changed');
    expect(standby.prepare("SELECT count(*) FROM meta WHERE key IN ('a', 'b')").pluck().get()).toBe(0);
  });

  test('a rolled-back savepoint takes its captured rows with it; nothing is captured after stopCapture', () => {
    const { leader, standby } = pair();
    startCapture(leader);
    takeChanges(leader);
    tx(leader, () => {
      leader.prepare("INSERT INTO meta (key, value) VALUES ('kept', '1')").run();
      expect(() =>
        tx(leader, () => {
          leader.prepare("INSERT INTO meta (key, value) VALUES ('gone', '1')").run();
          throw new Error('rolled back');
        }),
      ).toThrow('rolled back');
    });
    const taken = JSON.parse(takeChanges(leader)!.json) as RowChange[];
    expect(taken.map(([t, , row]) => [t, row?.key])).toEqual([['meta', 'kept']]);
    replayChanges(standby, taken);
    stopCapture(leader);
    leader.prepare("INSERT INTO meta (key, value) VALUES ('after', '1')").run();
    expect(leader.prepare("SELECT count(*) FROM sqlite_temp_master WHERE type = 'trigger'").pluck().get()).toBe(0);
    startCapture(leader);
    expect(takeChanges(leader)).toBeNull();
  });

  test('replaying an entry twice leaves the same rows (WITHOUT ROWID and rowid tables)', () => {
    const { leader, standby } = pair();
    // Attempts without their delivery (a foreign key): switched off on both sides alike.
    leader.pragma('foreign_keys = OFF');
    standby.pragma('foreign_keys = OFF');
    startCapture(leader);
    tx(leader, () => {
      leader
        .prepare(
          `INSERT INTO webhook_attempts (delivery_seq, attempt, account_id, live_mode, manual, webhook_timestamp, attempted_at, duration_ms)
           VALUES (1, 1, 'acc', 1, 0, 0, 'now', 3), (1, 2, 'acc', 1, 0, 0, 'now', 4)`,
        )
        .run();
    });
    const taken = JSON.parse(takeChanges(leader)!.json) as RowChange[];
    expect(taken[0][1]).toEqual([1, 1]);
    replayChanges(standby, taken);
    replayChanges(standby, taken);
    expect(dumpNoRowid(standby, 'webhook_attempts')).toEqual(dumpNoRowid(leader, 'webhook_attempts'));
  });

  test('a text column written from a JSON function (a feed row made with json_object) replays as the same text', () => {
    const { leader, standby } = pair();
    leader.pragma('foreign_keys = OFF');
    standby.pragma('foreign_keys = OFF');
    startCapture(leader);
    tx(leader, () => {
      leader
        .prepare(
          `INSERT INTO sync_feed (organization_id, account_id, live_mode, kind, object_id, payload, created_at)
           VALUES ('org', 'acc', 1, 'api_key', 'key_1', json_object('id', 'key_1', 'n', 2, 'x', json_array(1, 'a')), 'now')`,
        )
        .run();
    });
    const taken = JSON.parse(takeChanges(leader)!.json) as RowChange[];
    // The trigger's image embeds the payload as JSON (its subtype), not as a string.
    expect(typeof (taken[0][2] as Record<string, unknown>).payload).toBe('object');
    tx(standby, () => replayChanges(standby, taken));
    expect(dump(standby, 'sync_feed')).toEqual(dump(leader, 'sync_feed'));
    expect((dump(standby, 'sync_feed')[0] as { payload: string }).payload).toBe('{"id":"key_1","n":2,"x":[1,"a"]}');
  });

  test('a commit gate runs once per outermost transaction, before the commit; one that throws rolls it back', () => {
    const db = openDatabase(':memory:');
    startCapture(db);
    takeChanges(db);
    const seen: number[] = [];
    setCommitGate(db, () => {
      const taken = takeChanges(db);
      if (taken) seen.push(taken.count);
      if (db.prepare("SELECT count(*) FROM meta WHERE key = 'refused'").pluck().get()) throw new Error('the log said no');
      setLogPosition(db, seen.length);
    });
    tx(db, () => {
      db.prepare("INSERT INTO meta (key, value) VALUES ('x', '1')").run();
      tx(db, () => db.prepare("INSERT INTO meta (key, value) VALUES ('y', '1')").run());
    });
    expect(seen).toEqual([2]);
    expect(() => tx(db, () => db.prepare("INSERT INTO meta (key, value) VALUES ('refused', '1')").run())).toThrow('the log said no');
    expect(db.prepare("SELECT count(*) FROM meta WHERE key = 'refused'").pluck().get()).toBe(0);
    // The position moved with the first commit only (the refused one rolled back its own move).
    expect(logPosition(db)).toBe(1);
    setCommitGate(db, undefined);
  });

  test("a leader's entries not appended are undone, last first, to the rows before them (the schema's count triggers too)", () => {
    const db = openDatabase(':memory:');
    ensureLogState(db);
    startCapture(db);
    takeChanges(db);
    let n = 0;
    setCommitGate(db, () => {
      const changes = takeChanges(db);
      if (changes) queueEntry(db, changes, `e${++n}`, 0);
    });
    const now = '2026-01-01T00:00:00Z';
    const product = db.prepare(
      "INSERT INTO products (id, account_id, live_mode, name, tax_category, status, created_at, updated_at) VALUES (?, 'ac_1', 0, ?, 'good', 'active', ?, ?)",
    );
    tx(db, () => {
      product.run('prod_kept', 'Kept', now, now);
      db.prepare("INSERT INTO meta (key, value) VALUES ('a', '1'), ('b', '1')").run();
    });
    expect(db.prepare("SELECT n FROM list_counts WHERE list = 'products'").pluck().all()).toEqual([1]);
    const tables = ['products', 'meta', 'list_counts'];
    const rows = () => tables.map((t) => JSON.stringify(db.prepare(`SELECT * FROM "${t}" ORDER BY 1, 2`).all())).join('\n');
    const kept = rows();
    const position = logPosition(db);
    tx(db, () => {
      product.run('prod_gone', 'Gone', now, now);
      db.prepare("UPDATE meta SET value = '2' WHERE key = 'a'").run();
    });
    tx(db, () => {
      db.prepare("UPDATE products SET live_mode = 1, name = 'Moved' WHERE id = 'prod_kept'").run();
      db.prepare("DELETE FROM meta WHERE key = 'a'").run();
      db.prepare("UPDATE meta SET key = 'z' WHERE key = 'b'").run();
      db.prepare("DELETE FROM products WHERE id = 'prod_gone'").run();
    });
    expect(pendingEntries(db, position, 10).map((e) => e.id)).toEqual(['e2', 'e3']);
    expect(rows()).not.toBe(kept);
    setCommitGate(db, undefined);
    stopCapture(db);
    expect(tx(db, () => undoPending(db, position + 1))).toBe(2);
    expect(rows()).toBe(kept);
    expect(logPosition(db)).toBe(position);
    expect(pendingEntries(db, 0, 10).map((e) => e.id)).toEqual(['e1']);
  });
});

// The entry's forms (docs/decisions/0302-one-change-per-key-in-the-log.md): an update carries the
// columns it changed, each key one change; a replayed copy must equal the leader table by table,
// and the undo must bring back the rows before the entry, whatever the writes inside it were.

const TABLE = 'CREATE TABLE t (id INTEGER PRIMARY KEY, code TEXT UNIQUE, v TEXT, n INTEGER, b BLOB) STRICT';

/** Every table's rows (rowids too), the log's own tables left out. */
function everything(db: Db): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const tables = db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'central_log_%' ORDER BY name")
    .pluck()
    .all() as string[];
  for (const t of tables) {
    let rows: unknown[];
    try {
      rows = db.prepare(`SELECT rowid AS posd_r, * FROM "${t}"`).all();
    } catch {
      rows = db.prepare(`SELECT * FROM "${t}"`).all();
    }
    out[t] = rows.map((r) => JSON.stringify(r, (_k, v) => (v?.type === 'Buffer' ? Buffer.from(v.data).toString('hex') : v))).sort();
  }
  return out;
}

const now = '2026-01-01T00:00:00Z';
const product = (db: Db, id: string, name: string, live = 0) =>
  db
    .prepare(
      "INSERT INTO products (id, account_id, live_mode, name, tax_category, status, created_at, updated_at) VALUES (?, 'ac_1', ?, ?, 'good', 'active', ?, ?)",
    )
    .run(id, live, name, now, now);

/**
 * A leader and a standby from its snapshot; `setup` committed and replayed as the first entry,
 * `change` as the second. Checks the standby equals the leader after the replay (and after the
 * second entry replayed again, and another copy given the second entry's changes in reverse), then undoes the second entry at the leader and checks it equals
 * what it was after the first. Returns the second entry's changes.
 */
function roundTrip(setup: (db: Db) => void, change: (db: Db) => void): RowChange[] {
  const leader = openDatabase(':memory:');
  const standby = openDatabase(':memory:');
  // Replays the second entry's changes in reverse: the order inside an entry carries nothing.
  const reversed = openDatabase(':memory:');
  for (const db of [leader, standby, reversed]) {
    db.exec(TABLE);
    ensureLogState(db);
  }
  startCapture(leader);
  takeChanges(leader);
  const snapshot = snapshotChanges(leader);
  for (const db of [standby, reversed])
    tx(db, () => {
      db.pragma('defer_foreign_keys = ON');
      replayChanges(db, snapshot);
    });
  let n = 0;
  setCommitGate(leader, () => {
    const changes = takeChanges(leader);
    if (changes) queueEntry(leader, changes, `e${++n}`, 0);
  });
  tx(leader, () => setup(leader));
  const before = everything(leader);
  tx(leader, () => change(leader));
  setCommitGate(leader, undefined);
  const entries = pendingEntries(leader, 0, 10);
  expect(replayEntries(standby, entries, 0, 5000)).toBe(entries.length);
  expect(everything(standby)).toEqual(everything(leader));
  const second = entries.find((e) => e.position === 2);
  const changes = second ? (JSON.parse(second.changes) as RowChange[]) : [];
  if (second) {
    tx(standby, () => replayChanges(standby, changes));
    expect(everything(standby)).toEqual(everything(leader));
    replayEntries(reversed, entries.slice(0, 1), 0, 5000);
    tx(reversed, () => replayChanges(reversed, [...changes].reverse()));
    expect(everything(reversed)).toEqual(everything(leader));
    // One change per key.
    expect(new Set(changes.map(([t, k]) => `${t} ${JSON.stringify(k)}`)).size).toBe(changes.length);
  }
  stopCapture(leader);
  expect(tx(leader, () => undoPending(leader, 2))).toBe(second ? 1 : 0);
  expect(everything(leader)).toEqual(before);
  return changes;
}

const put = (db: Db, id: number, code: string, v: string, b?: string) =>
  db.prepare('INSERT INTO t (id, code, v, n, b) VALUES (?, ?, ?, 0, ?)').run(id, code, v, b ? Buffer.from(b, 'hex') : null);

const three = (db: Db) => {
  put(db, 1, 'a', 'one', '00ff');
  put(db, 2, 'b', 'two');
  put(db, 3, 'c', 'three');
  product(db, 'prod_1', 'One');
  product(db, 'prod_2', 'Two');
};

describe('one change per key, an update by its columns', () => {
  test('insert: the whole row, and the count its trigger moved', () => {
    const changes = roundTrip(three, (db) => {
      put(db, 4, 'd', 'four', 'abcd');
      product(db, 'prod_3', 'Three');
    });
    expect(changes.find(([t, k]) => t === 't' && k === 4)).toEqual(['t', 4, { id: 4, code: 'd', v: 'four', n: 0, b: 'ABCD' }]);
  });

  test('update of some columns: those columns only, undone to their values before', () => {
    const changes = roundTrip(three, (db) => {
      db.prepare("UPDATE t SET v = 'uno', b = x'0102' WHERE id = 1").run();
      // Set to what it holds: nothing changed, nothing logged.
      db.prepare("UPDATE t SET v = 'two' WHERE id = 2").run();
      db.prepare("UPDATE products SET name = 'Renamed', live_mode = 1 WHERE id = 'prod_1'").run();
    });
    expect(changes.find(([t]) => t === 't')).toEqual(['t', 1, { v: 'uno', b: '0102' }, 1]);
    expect(changes.some(([t, k]) => t === 't' && k === 2)).toBe(false);
    expect(changes.find(([t]) => t === 'products')?.slice(2)).toEqual([{ live_mode: 1, name: 'Renamed' }, 1]);
  });

  test('delete: a null, undone to the whole row', () => {
    roundTrip(three, (db) => {
      db.prepare('DELETE FROM t WHERE id = 1').run();
      db.prepare("DELETE FROM products WHERE id = 'prod_2'").run();
    });
  });

  test('insert then update: one whole row, and the count moved once (the update comes after the count in capture order)', () => {
    const changes = roundTrip(three, (db) => {
      put(db, 5, 'e', 'five');
      db.prepare("UPDATE t SET v = 'FIVE', n = n + 1 WHERE id = 5").run();
      product(db, 'prod_5', 'Five');
      db.prepare("UPDATE products SET name = 'Five!' WHERE id = 'prod_5'").run();
    });
    expect(changes.filter(([t]) => t === 't')).toEqual([['t', 5, { id: 5, code: 'e', v: 'FIVE', n: 1, b: null }]]);
  });

  test('update then delete: one delete, undone to the row before the update', () => {
    const changes = roundTrip(three, (db) => {
      db.prepare("UPDATE t SET v = 'changed', code = 'z' WHERE id = 2").run();
      db.prepare('DELETE FROM t WHERE id = 2').run();
      db.prepare("UPDATE products SET live_mode = 1 WHERE id = 'prod_2'").run();
      db.prepare("DELETE FROM products WHERE id = 'prod_2'").run();
    });
    expect(changes.filter(([t]) => t === 't')).toEqual([['t', 2, null]]);
  });

  test('insert then delete: nothing of the row in the entry', () => {
    const changes = roundTrip(three, (db) => {
      put(db, 6, 'f', 'six');
      db.prepare('DELETE FROM t WHERE id = 6').run();
      db.prepare("UPDATE t SET v = 'kept' WHERE id = 3").run();
    });
    expect(changes).toEqual([['t', 3, { v: 'kept' }, 1]]);
  });

  test('insert, update and delete of one row, and a whole entry that comes to nothing', () => {
    roundTrip(three, (db) => {
      product(db, 'prod_9', 'Nine');
      db.prepare("UPDATE products SET name = 'Nine!' WHERE id = 'prod_9'").run();
      db.prepare("DELETE FROM products WHERE id = 'prod_9'").run();
    });
  });

  test('a unique key swapped inside one entry, a three-way rotation, and a value freed by a delete', () => {
    roundTrip(three, (db) => {
      db.prepare("UPDATE t SET code = 'tmp' WHERE id = 1").run();
      db.prepare("UPDATE t SET code = 'a' WHERE id = 2").run();
      db.prepare("UPDATE t SET code = 'b' WHERE id = 1").run();
    });
    roundTrip(three, (db) => {
      db.prepare("UPDATE t SET code = 'x' WHERE id = 1").run();
      db.prepare("UPDATE t SET code = 'a' WHERE id = 2").run();
      db.prepare("UPDATE t SET code = 'b' WHERE id = 3").run();
      db.prepare("UPDATE t SET code = 'c', v = 'moved' WHERE id = 1").run();
    });
    roundTrip(three, (db) => {
      db.prepare('DELETE FROM t WHERE id = 1').run();
      put(db, 7, 'a', 'took its code');
      // A chain: 3 takes 2's code after 2 moved on.
      db.prepare("UPDATE t SET code = 'y' WHERE id = 2").run();
      db.prepare("UPDATE t SET code = 'b' WHERE id = 3").run();
    });
  });

  test('a key moved and a row deleted and made again under its key', () => {
    roundTrip(three, (db) => {
      db.prepare("UPDATE t SET v = 'before the move' WHERE id = 1").run();
      db.prepare('UPDATE t SET id = 10 WHERE id = 1').run();
      db.prepare('DELETE FROM t WHERE id = 2').run();
      put(db, 2, 'b', 'again');
      db.prepare('UPDATE t SET n = 5 WHERE id = 2').run();
      db.prepare("UPDATE products SET id = 'prod_moved' WHERE id = 'prod_1'").run();
    });
  });

  test("an update made in one entry and another in the next are undone together to the first one's before", () => {
    const db = openDatabase(':memory:');
    db.exec(TABLE);
    ensureLogState(db);
    startCapture(db);
    takeChanges(db);
    let n = 0;
    setCommitGate(db, () => {
      const changes = takeChanges(db);
      if (changes) queueEntry(db, changes, `e${++n}`, 0);
    });
    tx(db, () => three(db));
    const before = everything(db);
    tx(db, () => db.prepare("UPDATE t SET v = 'x' WHERE id = 1").run());
    tx(db, () => db.prepare("UPDATE t SET n = 9, v = 'y' WHERE id = 1").run());
    tx(db, () => db.prepare("UPDATE t SET code = 'q' WHERE id = 1").run());
    tx(db, () => db.prepare('DELETE FROM t WHERE id = 1').run());
    setCommitGate(db, undefined);
    stopCapture(db);
    expect(tx(db, () => undoPending(db, 2))).toBe(4);
    expect(everything(db)).toEqual(before);
  });
});

describe('entries from before the update form (a whole row per write)', () => {
  // As the capture wrote them before: one change per write, in write order, every update a whole row.
  const oldEntries = [
    {
      position: 1,
      changes: JSON.stringify([
        ['t', 1, { id: 1, code: 'a', v: 'one', n: 0, b: '00FF' }],
        ['t', 2, { id: 2, code: 'b', v: 'two', n: 0, b: null }],
      ]),
    },
    {
      position: 2,
      changes: JSON.stringify([
        ['t', 1, { id: 1, code: 'a', v: 'uno', n: 0, b: '00FF' }],
        ['t', 1, { id: 1, code: 'a', v: 'uno', n: 1, b: '00FF' }],
        ['t', 2, null],
        ['t', 2, { id: 2, code: 'b', v: 'again', n: 0, b: null }],
        ['t', 3, { id: 3, code: 'c', v: 'gone', n: 0, b: null }],
        ['t', 3, null],
        ['t', 1, { id: 1, code: 'tmp', v: 'uno', n: 1, b: '00FF' }],
        ['t', 2, { id: 2, code: 'a', v: 'again', n: 0, b: null }],
        ['t', 1, { id: 1, code: 'b', v: 'uno', n: 1, b: '00FF' }],
      ]),
    },
  ];

  test('replay to the last image of each key, a unique swap too', () => {
    const db = openDatabase(':memory:');
    db.exec(TABLE);
    ensureLogState(db);
    expect(replayEntries(db, oldEntries, 0, 5000)).toBe(2);
    expect(db.prepare('SELECT id, code, v, n, hex(b) AS b FROM t ORDER BY id').all()).toEqual([
      { id: 1, code: 'b', v: 'uno', n: 1, b: '00FF' },
      { id: 2, code: 'a', v: 'again', n: 0, b: '' },
    ]);
  });

  test("a file's pending entry with the old undo (the row before each write) is undone to the rows before it", () => {
    const db = openDatabase(':memory:');
    db.exec(TABLE);
    ensureLogState(db);
    replayEntries(db, oldEntries.slice(0, 1), 0, 5000);
    const before = everything(db);
    tx(db, () => replayChanges(db, JSON.parse(oldEntries[1].changes) as RowChange[]));
    const undo = JSON.stringify([
      ['t', 1, { id: 1, code: 'a', v: 'one', n: 0, b: '00FF' }],
      ['t', 1, { id: 1, code: 'a', v: 'uno', n: 0, b: '00FF' }],
      ['t', 2, { id: 2, code: 'b', v: 'two', n: 0, b: null }],
      ['t', 2, null],
      ['t', 3, null],
      ['t', 3, { id: 3, code: 'c', v: 'gone', n: 0, b: null }],
      ['t', 1, { id: 1, code: 'a', v: 'uno', n: 1, b: '00FF' }],
      ['t', 2, { id: 2, code: 'b', v: 'again', n: 0, b: null }],
      ['t', 1, { id: 1, code: 'tmp', v: 'uno', n: 1, b: '00FF' }],
    ]);
    db.prepare('INSERT INTO central_log_pending (position, id, changes, count, undo) VALUES (2, ?, ?, 9, ?)').run('old', oldEntries[1].changes, undo);
    setLogPosition(db, 2);
    expect(tx(db, () => undoPending(db, 2))).toBe(1);
    expect(everything(db)).toEqual(before);
    expect(logPosition(db)).toBe(1);
  });
});
