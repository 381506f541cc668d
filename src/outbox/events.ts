import { EventEmitter } from 'node:events';
import type { Statement } from 'better-sqlite3';
import { writeOrigin, type Db } from '../db/database.js';
import { newId } from '../ids.js';
import { isoTime, type Clock } from '../clock.js';

/** Rows per statement of `emitMany` (7 parameters each). */
const EMIT_MANY_ROWS = 100;

export interface EventScope {
  accountId: string;
  liveMode: boolean;
}

export interface EmitInput<P extends object = Record<string, unknown>> extends EventScope {
  type: string;
  payload: P;
  /** The resource the event is about (activities and deliveries group by it). */
  objectId?: string | null;
  /** An event keeps one id for life; a store's event re-emitted at the central passes its id here. */
  id?: string;
  createdAt?: string;
}

export interface StoredEvent {
  seq: number;
  id: string;
  account_id: string;
  live_mode: boolean;
  type: string;
  object_id: string | null;
  payload: Record<string, unknown>;
  created_at: string;
}

interface EventRow extends Omit<StoredEvent, 'live_mode' | 'payload'> {
  live_mode: number;
  payload: string;
}

/**
 * The outbox. `emit` must be called inside the transaction of the change it reports (see `tx`), so
 * the event exists exactly when the change does. Workers (webhook delivery, sync) read the table and
 * are woken by `notifier` after the emitting tick; a rolled-back event is simply never found.
 */
export class Outbox {
  readonly notifier = new EventEmitter();
  /**
   * Called inside the emitting transaction, right after each new event's row is written (not for a
   * re-emitted id already stored). The webhook worker fans the event out here, so its delivery rows
   * commit with it (docs/webhooks.md, "Event to first attempt"). A hook must not throw: its writes
   * belong to the emitter's transaction, and it undoes its own (a savepoint) when it fails.
   */
  private readonly emitHooks: Array<(seq: number) => void> = [];
  private wakePending = false;
  private readonly insert;
  private readonly byId;
  /** `emitMany`'s multi-row inserts, by row count (prepared on first use). */
  private readonly inserts = new Map<number, Statement>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {
    this.insert = db.prepare(
      `INSERT INTO events (id, account_id, live_mode, type, object_id, payload, created_at)
       VALUES (@id, @account_id, @live_mode, @type, @object_id, @payload, @created_at)
       ON CONFLICT(id) DO NOTHING`,
    );
    this.byId = db.prepare('SELECT * FROM events WHERE id = ?');
  }

  emit<P extends object>(input: EmitInput<P>): StoredEvent {
    if (!this.db.inTransaction) throw new Error('emit() outside a transaction: the event would not commit with its change');
    const id = input.id ?? newId('msg');
    const createdAt = input.createdAt ?? isoTime(this.clock.now());
    const row: Omit<EventRow, 'seq'> = {
      id,
      account_id: input.accountId,
      live_mode: input.liveMode ? 1 : 0,
      type: input.type,
      object_id: input.objectId ?? null,
      payload: JSON.stringify(input.payload),
      created_at: createdAt,
    };
    const result = this.insert.run(row);
    if (result.changes !== 0) for (const hook of this.emitHooks) hook(Number(result.lastInsertRowid));
    this.scheduleWake();
    // The row just written is known: reading it back cost a second statement per event on every
    // money write. Only an id that already existed (a re-emitted event) returns the stored one.
    if (result.changes === 0) return this.get(id)!;
    return justStored({ ...row, seq: Number(result.lastInsertRowid) });
  }

  /**
   * Events re-emitted by the hundred (the central's projector applying a store's `event` records
   * as one set): one multi-row insert per hundred, with the same rows, seqs, skipped ids and hooks
   * as `emit` called for each in order. Must run inside a transaction, as `emit`.
   */
  emitMany(inputs: ReadonlyArray<EmitInput & { id: string; createdAt: string }>): void {
    if (!this.db.inTransaction) throw new Error('emitMany() outside a transaction: the events would not commit with their change');
    for (let i = 0; i < inputs.length; i += EMIT_MANY_ROWS) {
      const chunk = inputs.slice(i, i + EMIT_MANY_ROWS);
      const args: unknown[] = [];
      for (const e of chunk) args.push(e.id, e.accountId, e.liveMode ? 1 : 0, e.type, e.objectId ?? null, JSON.stringify(e.payload), e.createdAt);
      const seqs = (this.insertOf(chunk.length).all(...args) as Array<{ seq: number }>).map((r) => r.seq);
      // RETURNING's order is SQLite's to choose; the rows were inserted in the inputs' order.
      if (this.emitHooks.length) for (const seq of seqs.sort((a, b) => a - b)) for (const hook of this.emitHooks) hook(seq);
    }
    if (inputs.length) this.scheduleWake();
  }

  private insertOf(rows: number): Statement {
    let stmt = this.inserts.get(rows);
    if (!stmt) {
      const values = Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ');
      stmt = this.db.prepare(
        `INSERT INTO events (id, account_id, live_mode, type, object_id, payload, created_at) VALUES ${values}
         ON CONFLICT(id) DO NOTHING RETURNING seq`,
      );
      this.inserts.set(rows, stmt);
    }
    return stmt;
  }

  /** Adds a hook run in the emitting transaction after each new event (see `emitHooks`). */
  onEmit(hook: (seq: number) => void): () => void {
    this.emitHooks.push(hook);
    return () => {
      const i = this.emitHooks.indexOf(hook);
      if (i >= 0) this.emitHooks.splice(i, 1);
    };
  }

  get(id: string): StoredEvent | undefined {
    const row = this.byId.get(id) as EventRow | undefined;
    return row ? toStoredEvent(row) : undefined;
  }

  private scheduleWake(): void {
    if (this.wakePending) return;
    this.wakePending = true;
    // The workers it wakes are not part of the request that emitted: they leave its write audit.
    writeOrigin.exit(() =>
      setImmediate(() => {
        this.wakePending = false;
        this.notifier.emit('events');
      }),
    );
  }
}

/**
 * The event just written, its payload parsed back from the stored JSON only when read: hardly any
 * emitter reads it, and parsing what was stringified a moment before cost every money write a
 * JSON.parse per event (2 % of a transfer's CPU; decision 0245).
 */
function justStored(row: EventRow): StoredEvent {
  const { payload: text, ...rest } = row;
  let payload: Record<string, unknown> | undefined;
  return Object.defineProperty({ ...rest, live_mode: row.live_mode === 1 }, 'payload', {
    enumerable: true,
    get: () => (payload ??= JSON.parse(text) as Record<string, unknown>),
  }) as StoredEvent;
}

export function toStoredEvent(row: EventRow): StoredEvent {
  return { ...row, live_mode: row.live_mode === 1, payload: JSON.parse(row.payload) };
}
