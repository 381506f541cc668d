import type Database from 'better-sqlite3';

type Statement = Database.Statement<unknown[], unknown>;
type Mode = 'pluck' | 'raw' | 'expand' | 'safeIntegers';

/**
 * A statement SQLite compiles at its first use instead of when a store asks for it. Stores are made
 * as the daemon registers its routes and starts its workers, and compiling their few hundred
 * statements then was ~15 ms of a start (issue 16, docs/startup.md), for statements most starts
 * never run. Everything else is better-sqlite3's: the modes set before the first use (`pluck()`,
 * `raw()`, ...) are applied to the statement when it is made; `source` is known without it.
 * SQL that does not fit the schema fails at its first use; `settleStatements` (below) compiles every
 * statement a started daemon holds once it has answered, and a test asserts none fails, so a mistake
 * still fails before it ships.
 */
class LazyStatement {
  private real: Statement | undefined;
  private modes: Array<[Mode, boolean | undefined]> = [];

  constructor(
    private readonly db: Database.Database,
    private readonly sql: string,
    private readonly make: (sql: string) => Statement,
  ) {}

  statement(): Statement {
    if (this.real) return this.real;
    const real = this.make(this.sql);
    for (const [mode, on] of this.modes) apply(real, mode, on);
    this.real = real;
    pending.get(this.db)?.delete(this);
    return real;
  }

  private mode(mode: Mode, on: boolean | undefined): this {
    if (this.real) apply(this.real, mode, on);
    else this.modes.push([mode, on]);
    return this;
  }

  run(...params: unknown[]) {
    return this.statement().run(...params);
  }
  get(...params: unknown[]) {
    return this.statement().get(...params);
  }
  all(...params: unknown[]) {
    return this.statement().all(...params);
  }
  iterate(...params: unknown[]) {
    return this.statement().iterate(...params);
  }
  columns() {
    return this.statement().columns();
  }
  bind(...params: unknown[]): this {
    this.statement().bind(...params);
    return this;
  }
  pluck(on?: boolean): this {
    return this.mode('pluck', on);
  }
  raw(on?: boolean): this {
    return this.mode('raw', on);
  }
  expand(on?: boolean): this {
    return this.mode('expand', on);
  }
  safeIntegers(on?: boolean): this {
    return this.mode('safeIntegers', on);
  }
  get source(): string {
    return this.sql;
  }
  get reader(): boolean {
    return this.statement().reader;
  }
  get readonly(): boolean {
    return this.statement().readonly;
  }
  get busy(): boolean {
    return this.real?.busy ?? false;
  }
  get database(): Database.Database {
    return this.db;
  }
}

/** better-sqlite3 takes a mode's toggle as a boolean or not at all, never undefined. */
function apply(statement: Statement, mode: Mode, on: boolean | undefined): void {
  if (on === undefined) statement[mode]();
  else statement[mode](on);
}

/** The statements of each connection not made yet, until its settle pass (below) has run. */
const pending = new WeakMap<Database.Database, Set<LazyStatement>>();

/** From now on `db.prepare(sql)` answers a statement compiled at its first use. */
export function prepareOnFirstUse(db: Database.Database): void {
  if (pending.has(db) || settling.has(db)) return; // already so
  const make = db.prepare.bind(db) as (sql: string) => Statement;
  const waiting = new Set<LazyStatement>();
  pending.set(db, waiting);
  db.prepare = ((sql: string) => {
    const s = new LazyStatement(db, sql, make);
    pending.get(db)?.add(s);
    return s;
  }) as unknown as typeof db.prepare;
}

export interface Settled {
  /** Statements compiled by the pass (the rest had been used already). */
  made: number;
  failed: Array<{ sql: string; error: string }>;
}

/** Statements compiled per turn of the event loop by the settle pass: a request waits for at most these. */
const SETTLE_SLICE = 25;
const settling = new WeakMap<Database.Database, Promise<Settled>>();

/**
 * Once a start has answered, compiles the statements the stores made and no request used yet, a
 * few per turn of the event loop, and then stops keeping track (statements made later are compiled
 * by their first use, remembered by no one). A statement whose SQL does not fit the database is
 * reported here, after the start instead of at its first use (the daemon logs them as errors, a
 * test asserts there are none). The first call schedules the pass; later ones get the same result.
 */
export function settleStatements(db: Database.Database, afterMs = 0): Promise<Settled> {
  let done = settling.get(db);
  if (!done) {
    done = new Promise<Settled>((resolve) => {
      const result: Settled = { made: 0, failed: [] };
      const slice = () => {
        const waiting = pending.get(db);
        if (!waiting || !db.open) {
          pending.delete(db);
          return resolve(result);
        }
        let n = 0;
        for (const s of waiting) {
          if (n++ === SETTLE_SLICE) return void setImmediate(slice);
          try {
            s.statement();
            result.made++;
          } catch (err) {
            // An iterator left open across a turn holds the connection: try again on the next one.
            if ((err as Error).message.includes('busy')) return void setImmediate(slice);
            waiting.delete(s);
            result.failed.push({ sql: s.source, error: (err as Error).message });
          }
        }
        pending.delete(db);
        resolve(result);
      };
      setTimeout(slice, afterMs).unref();
    });
    settling.set(db, done);
  }
  return done;
}
