import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';
import { lastPerKey } from './change-fold.js';
import { q, shapes, triggerDepths, type RowChange, type TableShape } from './change-shapes.js';
import { perDb } from './per-db.js';

/**
 * Replay of the log's row changes into a core's file (docs/central.md, "One log"): a whole row
 * replaces the row with its key (or is inserted), an update sets its columns on the row, a null
 * deletes it. Replay does not depend on the order of the changes inside an entry:
 *
 * - one change per key (an entry from before the update form is folded to its last image per key);
 * - the tables in the order of the schema's trigger chains (`triggerDepths`): a count or feed row
 *   the replayed writes' triggers touch is written after them, so it ends as the leader's image;
 * - in each table group, deletes first, then the rest; a write refused by a unique key is retried
 *   after the others (the row holding the value moves on in the same entry), and rows still
 *   refused after that (a swap: each holds the other's value) are deleted and inserted again whole.
 */

interface Replayer {
  shape: TableShape;
  update: (values: unknown[]) => number;
  insert: (values: unknown[]) => void;
  remove: (key: unknown[]) => void;
  /** Sets some columns of the row with the key (values, then key): rows changed. */
  updateSome: (columns: string[], values: unknown[]) => number;
  read: (key: unknown[]) => Record<string, unknown> | undefined;
}

const replayers = perDb((db: Db) => {
  const cache = new Map<string, Replayer>();
  return (table: string): Replayer => {
    let r = cache.get(table);
    if (r) return r;
    const s = shapes(db).get(table);
    if (!s) throw new Error(`the log names table ${table}, which this core's database does not have (run the leader's version)`);
    const keyCols = s.pk.length ? s.pk : ['rowid'];
    const where = keyCols.map((c) => `${c === 'rowid' ? c : q(c)} = ?`).join(' AND ');
    const val = (c: string) => (s.blobs.has(c) ? 'unhex(?)' : '?');
    const upd = db.prepare(`UPDATE main.${q(s.name)} SET ${s.columns.map((c) => `${q(c)} = ${val(c)}`).join(', ')} WHERE ${where}`);
    const insCols = s.pk.length ? s.columns : ['rowid', ...s.columns];
    const ins = db.prepare(
      `INSERT INTO main.${q(s.name)} (${insCols.map((c) => (c === 'rowid' ? c : q(c))).join(', ')}) VALUES (${insCols.map((c) => (c === 'rowid' ? '?' : val(c))).join(', ')})`,
    );
    const del = db.prepare(`DELETE FROM main.${q(s.name)} WHERE ${where}`);
    const sel = db.prepare(`SELECT ${s.columns.map(q).join(', ')} FROM main.${q(s.name)} WHERE ${where}`);
    const some = new Map<string, Statement>();
    r = {
      shape: s,
      update: (values) => upd.run(...values).changes,
      insert: (values) => void ins.run(...values),
      remove: (key) => void del.run(...key),
      updateSome: (columns, values) => {
        const id = columns.join('\u0000');
        let st = some.get(id);
        if (!st) {
          // The column sets an application updates are few; a bound keeps a stray one from growing it.
          if (some.size >= 256) some.clear();
          st = db.prepare(`UPDATE main.${q(s.name)} SET ${columns.map((c) => `${q(c)} = ${val(c)}`).join(', ')} WHERE ${where}`);
          some.set(id, st);
        }
        return st.run(...values).changes;
      },
      read: (key) => sel.get(...key) as Record<string, unknown> | undefined,
    };
    cache.set(table, r);
    return r;
  };
});

// A text value SQLite made with a JSON function in the same statement (a feed row's payload from
// json_object) keeps its JSON subtype into the trigger, and the image embeds it as an object, not a
// string: it is stored back as the text it was.
const bindable = (v: unknown) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : (v ?? null));

const keyOf = (key: number | unknown[]) => (Array.isArray(key) ? key : [key]);

function write(r: Replayer, [table, key, row, partial]: RowChange): void {
  const k = keyOf(key);
  const img = row!;
  if (partial === 1) {
    const columns = Object.keys(img);
    if (r.updateSome(columns, [...columns.map((c) => bindable(img[c])), ...k]) === 0)
      throw new Error(`the log updates ${table} ${JSON.stringify(key)}, which this core's database does not hold (it is not at the log's position)`);
    return;
  }
  const values = r.shape.columns.map((c) => bindable(img[c]));
  if (r.update([...values, ...k]) === 0) r.insert(Array.isArray(key) ? values : [key, ...values]);
}

const isUnique = (err: unknown) => (err as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE';

/** The row a refused change ends as, whole (its update's columns over the row held now), and the held row deleted. */
function lift(r: Replayer, change: RowChange): RowChange {
  const [table, key, row, partial] = change;
  if (partial !== 1) {
    r.remove(keyOf(key));
    return change;
  }
  const held = r.read(keyOf(key));
  if (!held) throw new Error(`the log updates ${table} ${JSON.stringify(key)}, which this core's database does not hold (it is not at the log's position)`);
  const whole: Record<string, unknown> = {};
  for (const c of r.shape.columns) whole[c] = r.shape.blobs.has(c) && Buffer.isBuffer(held[c]) ? held[c].toString('hex').toUpperCase() : held[c];
  r.remove(keyOf(key));
  return [table, key, Object.assign(whole, row)];
}

function applyGroup(db: Db, group: readonly RowChange[]): void {
  const of = replayers(db);
  for (const c of group) if (c[2] === null) of(c[0]).remove(keyOf(c[1]));
  // Written until none is left; a pass that writes none of those left finds a swap.
  let left = group.filter((c) => c[2] !== null);
  while (left.length) {
    const refused: RowChange[] = [];
    for (const c of left) {
      try {
        write(of(c[0]), c);
      } catch (err) {
        if (!isUnique(err)) throw err;
        refused.push(c);
      }
    }
    if (refused.length && refused.length === left.length) {
      // Each holds a value another wants: all out, then all in (their final values do not clash).
      const lifted = refused.map((c) => lift(of(c[0]), c));
      for (const c of lifted) write(of(c[0]), c);
      return;
    }
    left = refused;
  }
}

/**
 * Replays a log entry's changes into this database, in the caller's transaction (with foreign keys
 * deferred). Idempotent: replaying an entry twice leaves the same rows.
 */
export function replayChanges(db: Db, changes: readonly RowChange[]): void {
  const depths = triggerDepths(db);
  const groups: RowChange[][] = [];
  for (const c of lastPerKey(changes)) (groups[depths.get(c[0]) ?? 0] ??= []).push(c);
  for (const group of groups) if (group) applyGroup(db, group);
}
