import type { Statement } from 'better-sqlite3';
import { addBefore, changeId, foldCaptured, type Captured } from './change-fold.js';
import { replayChanges } from './change-replay.js';
import { LOG_STATE_TABLE, PENDING_TABLE, q, shapes, type RowChange, type TableShape } from './change-shapes.js';
import { tx, type Db } from './database.js';
import { perDb } from './per-db.js';

export { LOG_STATE_TABLE, PENDING_TABLE, type RowChange } from './change-shapes.js';
export { replayChanges } from './change-replay.js';

/**
 * Row-level change capture and replay for a chain's cores (docs/central.md, "One log"): the leader
 * captures every row its writes change, a commit gate (`setCommitGate`) appends them to the
 * central's log before the commit, and every other core replays the log into its own file. The
 * log carries row images, not requests: a replay runs no applier, no id generator and no clock,
 * so every core ends with the leader's very rows, and sends nothing (no webhook, no feed).
 *
 * Capture is TEMP triggers on the leader's own connection: no other connection (a tool in another
 * process, a standby) captures, and nothing persistent changes in the schema.
 */

/**
 * The statements run at every commit of a leader (take the changes, queue the entry, move the
 * position), prepared once per connection on first use: preparing them at each commit cost the
 * projector's thread about 5 µs a record (docs/decisions/0283-where-a-records-cpu-goes.md). Made
 * lazily because their tables come and go (the temp table with the capture, the pending list with
 * the log state); SQLite prepares a statement again itself when the schema changed.
 */
const statements = perDb(() => new Map<string, Statement>());
function cached(db: Db, sql: string, mode?: 'pluck' | 'raw'): Statement {
  const all = statements(db);
  const key = mode ? `${mode}:${sql}` : sql;
  let st = all.get(key);
  if (!st) {
    st = db.prepare(sql);
    if (mode === 'pluck') st.pluck();
    else if (mode === 'raw') st.raw();
    all.set(key, st);
  }
  return st;
}

/** The core's place in the log, in its own file: moved in the same transaction as what it replays or appends. */
export function ensureLogState(db: Db): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${LOG_STATE_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), position INTEGER NOT NULL) STRICT;
    INSERT OR IGNORE INTO ${LOG_STATE_TABLE} (id, position) VALUES (1, 0);
    CREATE TABLE IF NOT EXISTS ${PENDING_TABLE} (position INTEGER PRIMARY KEY, id TEXT NOT NULL, changes TEXT NOT NULL, count INTEGER NOT NULL, undo TEXT NOT NULL) STRICT;`);
}

export function logPosition(db: Db): number {
  return cached(db, `SELECT position FROM ${LOG_STATE_TABLE} WHERE id = 1`, 'pluck').get() as number;
}

export function setLogPosition(db: Db, position: number): void {
  cached(db, `UPDATE ${LOG_STATE_TABLE} SET position = ? WHERE id = 1`).run(position);
}

function keyOf(s: TableShape, row: 'NEW' | 'OLD'): string {
  return s.pk.length ? `json_array(${s.pk.map((c) => `${row}.${q(c)}`).join(', ')})` : `${row}.rowid`;
}

/** A column's value in an image: a blob as hex text (NULL stays NULL: hex() would make it an empty blob). */
function cellOf(s: TableShape, c: string, row: 'NEW' | 'OLD'): string {
  return s.blobs.has(c) ? `iif(${row}.${q(c)} IS NULL, NULL, hex(${row}.${q(c)}))` : `${row}.${q(c)}`;
}

function imageOf(s: TableShape, row: 'NEW' | 'OLD' = 'NEW'): string {
  return `json_object(${s.columns.map((c) => `'${c}', ${cellOf(s, c, row)}`).join(', ')})`;
}

/** A SQL text literal. */
const lit = (text: string) => `'${text.replace(/'/g, "''")}'`;

/**
 * An update's image: a JSON object of the columns whose value changed, with their `row` value
 * (NEW: after, OLD: before). Built by concatenation, as json_object cannot leave a key out.
 */
function changedOf(s: TableShape, row: 'NEW' | 'OLD'): string {
  const parts = s.columns.map((c) => `iif(OLD.${q(c)} IS NOT NEW.${q(c)}, ${lit(`,${JSON.stringify(c)}:`)} || json_quote(${cellOf(s, c, row)}), '')`);
  return `'{' || substr(${parts.join(' || ')}, 2) || '}'`;
}

/**
 * Installs the capture triggers on this connection (TEMP: this connection only, gone with it).
 * Every insert, update and delete of a table is written to `temp.posd_changes` in the statement's
 * own transaction, so a rollback (of a savepoint too) takes its captured rows with it. An insert
 * keeps the whole row; an update the columns it changed, after and before (none changed: nothing
 * kept); a delete the whole row before; an update that moves a key is a delete and an insert.
 */
export function startCapture(db: Db): void {
  ensureLogState(db);
  // `op`: i, u or d. `prior`: the row (an update's: its changed columns) before the change, to undo an entry.
  db.exec('CREATE TEMP TABLE IF NOT EXISTS posd_changes (id INTEGER PRIMARY KEY, tbl TEXT NOT NULL, k TEXT NOT NULL, op TEXT NOT NULL, img TEXT, prior TEXT)');
  for (const s of shapes(db).values()) {
    if (s.columns.length > 60) throw new Error(`table ${s.name} has ${s.columns.length} columns: too many for one json_object image`);
    const t = lit(s.name);
    const ins = (key: string, op: string, img: string, prior: string) =>
      `INSERT INTO temp.posd_changes (tbl, k, op, img, prior) VALUES (${t}, ${key}, '${op}', ${img}, ${prior});`;
    const moved = `${keyOf(s, 'OLD')} IS NOT ${keyOf(s, 'NEW')}`;
    const changed = s.columns.map((c) => `OLD.${q(c)} IS NOT NEW.${q(c)}`).join(' OR ');
    db.exec(`
      CREATE TEMP TRIGGER IF NOT EXISTS ${q(`posd_capture_i_${s.name}`)} AFTER INSERT ON main.${q(s.name)} BEGIN ${ins(keyOf(s, 'NEW'), 'i', imageOf(s), 'NULL')} END;
      CREATE TEMP TRIGGER IF NOT EXISTS ${q(`posd_capture_u_${s.name}`)} AFTER UPDATE ON main.${q(s.name)} WHEN NOT (${moved}) AND (${changed}) BEGIN
        ${ins(keyOf(s, 'NEW'), 'u', changedOf(s, 'NEW'), changedOf(s, 'OLD'))} END;
      CREATE TEMP TRIGGER IF NOT EXISTS ${q(`posd_capture_m_${s.name}`)} AFTER UPDATE ON main.${q(s.name)} WHEN ${moved} BEGIN
        ${ins(keyOf(s, 'OLD'), 'd', 'NULL', imageOf(s, 'OLD'))}
        ${ins(keyOf(s, 'NEW'), 'i', imageOf(s), 'NULL')} END;
      CREATE TEMP TRIGGER IF NOT EXISTS ${q(`posd_capture_d_${s.name}`)} AFTER DELETE ON main.${q(s.name)} BEGIN ${ins(keyOf(s, 'OLD'), 'd', 'NULL', imageOf(s, 'OLD'))} END;`);
  }
}

/** Removes this connection's capture triggers (a leader that lost its lease). */
export function stopCapture(db: Db): void {
  const triggers = db.prepare("SELECT name FROM sqlite_temp_master WHERE type = 'trigger' AND name LIKE 'posd_capture_%'").pluck().all() as string[];
  for (const name of triggers) db.exec(`DROP TRIGGER IF EXISTS temp.${q(name)}`);
  db.exec('DROP TABLE IF EXISTS temp.posd_changes');
}

/**
 * The changes captured since the last take, as the log's JSON text (an array of RowChange, one per
 * key: src/db/change-fold.ts), and forgets them: null when nothing changed. `undo`: the same keys
 * with the rows before the transaction (an update's: the columns it changed).
 */
export function takeChanges(db: Db): { json: string; count: number; undo: string } | null {
  const rows = cached(db, 'SELECT tbl, k, op, img, prior FROM temp.posd_changes ORDER BY id', 'raw').all() as Captured[];
  if (!rows.length) return null;
  cached(db, 'DELETE FROM temp.posd_changes').run();
  return foldCaptured(rows);
}

/** An entry committed here and not yet appended (src/sync/central/log-appender.ts). */
export interface PendingEntry {
  position: number;
  id: string;
  changes: string;
  count: number;
}

/**
 * In a leader's transaction, at its end: its changes as the entry at the next position, kept in
 * the file until appended (the commit does not wait for the central's log), and the position
 * moved. Entries appended through `appended` are removed meanwhile (not captured themselves).
 */
export function queueEntry(db: Db, changes: { json: string; count: number; undo: string }, id: string, appended: number): number {
  const next = logPosition(db) + 1;
  cached(db, `DELETE FROM ${PENDING_TABLE} WHERE position <= ?`).run(appended);
  cached(db, `INSERT INTO ${PENDING_TABLE} (position, id, changes, count, undo) VALUES (?, ?, ?, ?, ?)`).run(
    next,
    id,
    changes.json,
    changes.count,
    changes.undo,
  );
  setLogPosition(db, next);
  return next;
}

/** The entries not yet appended past `after`, in order, at most `limit`. */
export function pendingEntries(db: Db, after: number, limit: number): PendingEntry[] {
  return cached(db, `SELECT position, id, changes, count FROM ${PENDING_TABLE} WHERE position > ? ORDER BY position LIMIT ?`).all(
    after,
    limit,
  ) as PendingEntry[];
}

/** The first entry not yet appended, or undefined (none: the file is all in the log). */
export function firstPending(db: Db): { position: number; id: string } | undefined {
  // A core's file from before the list (never had one) holds none.
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(PENDING_TABLE)) return undefined;
  return db.prepare(`SELECT position, id FROM ${PENDING_TABLE} ORDER BY position LIMIT 1`).get() as { position: number; id: string } | undefined;
}

/** The positions and ids of every entry not yet appended, in order. */
export function pendingIds(db: Db): Array<{ position: number; id: string }> {
  return db.prepare(`SELECT position, id FROM ${PENDING_TABLE} ORDER BY position`).all() as Array<{ position: number; id: string }>;
}

/** Forgets the entries the log holds (through `upTo`), in the caller's transaction. */
export function dropPending(db: Db, upTo: number): void {
  cached(db, `DELETE FROM ${PENDING_TABLE} WHERE position <= ?`).run(upTo);
}

/**
 * Undoes the entries not appended from `from` on and moves the file's position back before them:
 * another leader wrote the log at those positions (they were never acknowledged). Every key they
 * touched gets back the row (or, for keys only updated, the columns) it had before the first of
 * them; entries from before the update form hold whole rows, and undo the same. The schema's own
 * triggers fire on those writes (a count moved twice, a feed row made): the images are written
 * again and what the triggers changed beside them is set back, until a pass makes nothing new. In the caller's
 * transaction; returns how many entries were undone.
 */
export function undoPending(db: Db, from: number): number {
  const undos = db.prepare(`SELECT undo FROM ${PENDING_TABLE} WHERE position >= ? ORDER BY position`).pluck().all(from) as string[];
  const priors = new Map<string, RowChange>();
  for (const undo of undos) for (const change of JSON.parse(undo) as RowChange[]) addBefore(priors, change);
  const capturing = db.prepare("SELECT 1 FROM sqlite_temp_master WHERE name = 'posd_changes'").get() !== undefined;
  if (!capturing) startCapture(db);
  takeChanges(db);
  db.pragma('defer_foreign_keys = ON');
  try {
    for (let pass = 0; pass < 5; pass++) {
      replayChanges(db, [...priors.values()]);
      const made = takeChanges(db);
      // What the undo's writes made beside the keys undone (a trigger's row) goes back to what it was.
      const extra = made ? (JSON.parse(made.undo) as RowChange[]).filter(([t, k]) => !priors.has(changeId(t, k))) : [];
      if (!extra.length && pass > 0) break;
      replayChanges(db, extra);
      takeChanges(db);
    }
  } finally {
    if (!capturing) stopCapture(db);
  }
  db.prepare(`DELETE FROM ${PENDING_TABLE} WHERE position >= ?`).run(from);
  setLogPosition(db, Math.min(logPosition(db), from - 1));
  return undos.length;
}

/** Every row of every captured table as inserts: the log's first entry when a leader starts an empty log. */
export function snapshotChanges(db: Db): RowChange[] {
  const out: RowChange[] = [];
  for (const s of shapes(db).values()) {
    const cols = s.columns.map((c) => `${q(c)}`);
    const sel = s.pk.length ? cols.join(', ') : `rowid AS "posd_rowid", ${cols.join(', ')}`;
    for (const row of db.prepare(`SELECT ${sel} FROM main.${q(s.name)}`).iterate() as Iterable<Record<string, unknown>>) {
      const img: Record<string, unknown> = {};
      for (const c of s.columns) img[c] = s.blobs.has(c) && Buffer.isBuffer(row[c]) ? (row[c] as Buffer).toString('hex').toUpperCase() : row[c];
      out.push([s.name, s.pk.length ? s.pk.map((c) => row[c]) : (row.posd_rowid as number), img]);
    }
  }
  return out;
}

/**
 * Refuses every insert, update and delete on this connection with `message` (TEMP triggers: this
 * connection only). A tool opening a chain core's file while it cannot write through the log gets
 * the reason as the error of its first write, whatever code made it.
 */
export function refuseWrites(db: Db, message: string): void {
  const raise = `SELECT RAISE(ABORT, '${message.replace(/'/g, "''")}');`;
  for (const s of shapes(db).values()) {
    for (const [op, verb] of [
      ['i', 'INSERT'],
      ['u', 'UPDATE'],
      ['d', 'DELETE'],
    ] as const)
      db.exec(`CREATE TEMP TRIGGER IF NOT EXISTS ${q(`posd_refuse_${op}_${s.name}`)} BEFORE ${verb} ON main.${q(s.name)} BEGIN ${raise} END;`);
  }
}

/** True when this file holds a place in a chain's central log: it has been a chain core's. */
export function isChainCoreFile(db: Db): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(LOG_STATE_TABLE) !== undefined;
}

/**
 * Replays log entries (in order, contiguous after this file's position) from `start` in one
 * transaction of about `maxChanges` row changes (at least one entry), moving the file's position
 * with them; returns the index of the first entry not replayed. The caller sets the commit gate:
 * a replay is not a write of this connection's own.
 */
export function replayEntries(db: Db, entries: ReadonlyArray<{ position: number; changes: string }>, start: number, maxChanges: number): number {
  let i = start;
  tx(db, () => {
    // Checked at the commit: a snapshot lists its tables in name order, not in their references' order.
    db.pragma('defer_foreign_keys = ON');
    // Another connection of the same core (its projector's thread) may have replayed some already.
    const at = logPosition(db);
    while (i < entries.length && entries[i].position <= at) i++;
    let changes = 0;
    while (i < entries.length && (changes === 0 || changes < maxChanges)) {
      const e = entries[i];
      const rows = JSON.parse(e.changes) as RowChange[];
      replayChanges(db, rows);
      changes += rows.length;
      setLogPosition(db, e.position);
      i++;
    }
  });
  return i;
}
