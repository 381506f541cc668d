import Database from 'better-sqlite3';
import { ownerOnlyDir, ownerOnlyFiles } from '../file-modes.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import { dirname } from 'node:path';
import { migrate } from './migrate.js';

export type Db = Database.Database;

export interface OpenOptions {
  synchronous?: 'FULL' | 'NORMAL' | 'EXTRA';
  busyTimeoutMs?: number;
  readonly?: boolean;
  /** Skip migrations (tools that must not change the file, e.g. a version check). */
  migrate?: boolean;
}

/**
 * Opens the database with the pragmas posd relies on: WAL so readers never block the writer,
 * `synchronous=FULL` by default so a committed sale survives a power cut, foreign keys on.
 */
export function openDatabase(file: string, opts: OpenOptions = {}): Db {
  if (file !== ':memory:' && !opts.readonly) ownerOnlyDir(dirname(file));
  const db = new Database(file, { readonly: opts.readonly ?? false });
  // Before WAL mode: SQLite gives -wal and -shm the main file's mode.
  if (file !== ':memory:' && !opts.readonly) ownerOnlyFiles(file, `${file}-wal`, `${file}-shm`);
  db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
  if (!opts.readonly) {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
  }
  db.pragma('foreign_keys = ON');
  if (opts.migrate !== false && !opts.readonly) migrate(db);
  // After the migrations, whose index builds may sort more than memory should hold. A group
  // commit runs each job in a savepoint, and SQLite keeps a page's content from before each
  // savepoint that changes it in a statement journal; past 64 KiB that journal spills to a
  // deleted file in /var/tmp, two `pwrite`s per page (its number, its content): 28 of a cash
  // sale's 35 page writes (decision 0292). In memory it costs a copy each, until the commit.
  if (file !== ':memory:' && !opts.readonly) db.pragma('temp_store = MEMORY');
  return db;
}

/**
 * Runs `fn` in one IMMEDIATE transaction (the write lock is taken at BEGIN, so two writers never
 * deadlock on an upgrade). Every write in posd goes through here: the change, its events and its
 * sync records commit together or not at all. Nested calls become savepoints.
 */
export function tx<T>(db: Db, fn: () => T): T {
  if (!db.inTransaction && !commitAudit.inPipeline) {
    const origin = writeOrigin.getStore();
    if (origin) commitAudit.outsidePipeline.add(origin);
  }
  const outermost = !db.inTransaction;
  const gate = outermost ? gates.get(db) : undefined;
  const run = () =>
    !gate
      ? (runnerOf(db).immediate(fn) as T)
      : (runnerOf(db).immediate(() => {
          const value = fn();
          gate();
          return value;
        }) as T);
  const turn = outermost ? turns.get(db) : undefined;
  return turn ? inTurn(turn, run) : run();
}

/**
 * Two connections to one file from two threads of one process (a chain core's daemon and its
 * projector thread, src/projector-thread.ts) take SQLite's write lock in turns instead of through
 * SQLite's busy handler, which sleeps in growing steps (up to 100 ms) and can miss every gap
 * between the other thread's back-to-back transactions. `flags[0]`: the first side's transactions
 * waiting or running; `flags[1]`: 1 while the second side's runs. The first side (the daemon,
 * answering /api) goes first: the second starts none while the first waits, and the first waits
 * (its thread blocked, as in the busy handler) only for the transaction the second is running.
 */
export interface WriteTurn {
  flags: Int32Array;
  side: 'first' | 'second';
}

const turns = new WeakMap<Db, WriteTurn>();

export function setWriteTurn(db: Db, turn: WriteTurn | undefined): void {
  if (turn) turns.set(db, turn);
  else turns.delete(db);
}

/** How long one wait for the other side lasts at most before looking again. */
const TURN_WAIT_MS = 100;
/** The first side waits no longer than this in all (a second side that ended mid-transaction): SQLite's lock decides then. */
const TURN_GIVE_UP_MS = 5000;

function inTurn<T>(turn: WriteTurn, run: () => T): T {
  const f = turn.flags;
  if (turn.side === 'first') {
    Atomics.add(f, 0, 1);
    try {
      const deadline = Date.now() + TURN_GIVE_UP_MS;
      while (Atomics.load(f, 1) === 1 && Date.now() < deadline) Atomics.wait(f, 1, 1, TURN_WAIT_MS);
      return run();
    } finally {
      Atomics.sub(f, 0, 1);
      Atomics.notify(f, 0);
    }
  }
  for (;;) {
    Atomics.store(f, 1, 1);
    const waiting = Atomics.load(f, 0);
    if (waiting === 0) break;
    Atomics.store(f, 1, 0);
    Atomics.notify(f, 1);
    Atomics.wait(f, 0, waiting, TURN_WAIT_MS);
  }
  try {
    return run();
  } finally {
    Atomics.store(f, 1, 0);
    Atomics.notify(f, 1);
  }
}

/**
 * What runs at the end of every outermost transaction of a connection, before its commit: a
 * chain's leading core appends the transaction's captured changes to the central's log there
 * (src/sync/pg/central-log.ts), so nothing commits here that the log does not hold. A gate that
 * throws rolls the whole transaction back.
 */
const gates = new WeakMap<Db, () => void>();

export function setCommitGate(db: Db, gate: (() => void) | undefined): void {
  if (gate) gates.set(db, gate);
  else gates.delete(db);
}

/**
 * One transaction function per connection, called with the work as its argument: better-sqlite3's
 * `db.transaction(fn)` builds a wrapper each time (about 30 µs, measured), and the projector and the
 * appliers nest several per record. Nested calls still become savepoints.
 */
const runners = new WeakMap<Db, Database.Transaction<(fn: () => unknown) => unknown>>();
function runnerOf(db: Db): Database.Transaction<(fn: () => unknown) => unknown> {
  let runner = runners.get(db);
  if (!runner) {
    runner = db.transaction((fn: () => unknown) => fn());
    runners.set(db, runner);
  }
  return runner;
}

/**
 * What answers a request runs under this (src/api/app.ts sets it to the route) so a write that
 * commits on its own, paying a flush the group commit would have shared, is noticed: its route is
 * kept in `commitAudit.outsidePipeline`, which the tests read (test/money/commit-pipeline.test.ts).
 */
export const writeOrigin = new AsyncLocalStorage<string>();

export const commitAudit = {
  /** True while a group commit runs its batch (src/db/group-commit.ts). */
  inPipeline: false,
  outsidePipeline: new Set<string>(),
};
