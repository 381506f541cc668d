import { describe, expect, test } from 'vitest';
import { openDatabase, setCommitGate, tx, type Db } from '../../src/db/database.js';
import {
  ensureLogState,
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
    expect(ship(leader, standby)).toBeGreaterThanOrEqual(5);
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
