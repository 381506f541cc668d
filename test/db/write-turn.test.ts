import { Worker } from 'node:worker_threads';
import { describe, expect, test } from 'vitest';
import { openDatabase, setWriteTurn, tx } from '../../src/db/database.js';
import { ensureLogState, logPosition, replayEntries } from '../../src/db/change-capture.js';

// A chain core's daemon and its projector thread write one SQLite file from two threads
// (src/projector-thread.ts): they take the write lock in turns (src/db/database.ts `WriteTurn`),
// the daemon's side first. The other side here is a plain thread that only moves the flags, as the
// projector thread's transactions do around their work.

/** A thread that, on each message, takes `index` of the flags for `ms` (1, then 0 and a notify). */
function holder(flags: SharedArrayBuffer): Worker {
  return new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const f = new Int32Array(workerData);
     parentPort.on('message', ({ index, ms }) => {
       Atomics.store(f, index, 1);
       parentPort.postMessage('holding');
       const until = Date.now() + ms;
       while (Date.now() < until) Atomics.wait(f, 3, 0, 5);
       Atomics.store(f, index, 0);
       Atomics.notify(f, index);
       parentPort.postMessage('released');
     });`,
    { eval: true, workerData: flags },
  );
}

const said = (w: Worker, what: string) => new Promise<void>((resolve) => w.on('message', (m) => m === what && resolve()));

describe('write turns between two threads', () => {
  test("the daemon's side waits for the other side's transaction in progress, and says it waits", async () => {
    const buf = new SharedArrayBuffer(16);
    const flags = new Int32Array(buf);
    const db = openDatabase(':memory:');
    setWriteTurn(db, { flags, side: 'first' });
    const w = holder(buf);
    try {
      const holding = said(w, 'holding');
      w.postMessage({ index: 1, ms: 300 });
      await holding;
      const started = performance.now();
      let waitingSeen = 0;
      tx(db, () => {
        waitingSeen = Atomics.load(flags, 0);
      });
      // It ran only once the other side's transaction ended; while it waited it was counted.
      expect(performance.now() - started).toBeGreaterThanOrEqual(150);
      expect(waitingSeen).toBe(1);
      expect(Atomics.load(flags, 0)).toBe(0);
    } finally {
      await w.terminate();
      db.close();
    }
  });

  test("the other side starts no transaction while one of the daemon's waits, and marks its own while it runs", async () => {
    const buf = new SharedArrayBuffer(16);
    const flags = new Int32Array(buf);
    const db = openDatabase(':memory:');
    setWriteTurn(db, { flags, side: 'second' });
    const w = holder(buf);
    try {
      const holding = said(w, 'holding');
      w.postMessage({ index: 0, ms: 300 });
      await holding;
      const started = performance.now();
      let mine = 0;
      tx(db, () => {
        mine = Atomics.load(flags, 1);
      });
      expect(performance.now() - started).toBeGreaterThanOrEqual(150);
      expect(mine).toBe(1);
      expect(Atomics.load(flags, 1)).toBe(0);
    } finally {
      await w.terminate();
      db.close();
    }
  });

  test('a connection without a turn never waits on the flags', () => {
    const db = openDatabase(':memory:');
    const flags = new Int32Array(new SharedArrayBuffer(16));
    Atomics.store(flags, 1, 1);
    setWriteTurn(db, { flags, side: 'first' });
    setWriteTurn(db, undefined);
    const started = performance.now();
    tx(db, () => undefined);
    expect(performance.now() - started).toBeLessThan(100);
    db.close();
  });
});

describe('replaying entries another connection of the core replayed already', () => {
  test('entries at or before the file position are passed over, not replayed again', () => {
    const db = openDatabase(':memory:');
    ensureLogState(db);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    const entry = (position: number, v: string) => ({ position, changes: JSON.stringify([['t', 1, { id: 1, v }]]) });
    // The other connection replayed 1 and 2: a replay of 1..3 read before that must not bring 1 back.
    replayEntries(db, [entry(1, 'one'), entry(2, 'two')], 0, 5000);
    expect(replayEntries(db, [entry(1, 'one'), entry(2, 'two'), entry(3, 'three')], 0, 5000)).toBe(3);
    expect(db.prepare('SELECT v FROM t WHERE id = 1').pluck().get()).toBe('three');
    expect(logPosition(db)).toBe(3);
    // All already there: nothing changes.
    expect(replayEntries(db, [entry(2, 'two')], 0, 5000)).toBe(1);
    expect(db.prepare('SELECT v FROM t WHERE id = 1').pluck().get()).toBe('three');
    expect(logPosition(db)).toBe(3);
    db.close();
  });
});
