import type { Db } from './database.js';
import { perDb } from './per-db.js';

/**
 * The log's row changes and the tables they name (src/db/change-capture.ts captures them,
 * src/db/change-replay.ts replays them). A change is one of:
 *
 * - `[table, key, row]`: the whole row after the entry (inserted, or replaced when it exists);
 * - `[table, key, null]`: the row deleted;
 * - `[table, key, columns, 1]`: an update of these columns only (with their values after the
 *   entry) of a row that exists; an undo holds the same columns with their values before it.
 *
 * The key is the rowid, or a WITHOUT ROWID table's primary key values. Entries written before the
 * update form (every update a whole row, one change per write, in write order) replay the same.
 */
export type RowChange = [table: string, key: number | unknown[], row: Record<string, unknown> | null, partial?: 1];

/** This table (the core's place in the log) and SQLite's own are never captured. */
export const LOG_STATE_TABLE = 'central_log_state';
/**
 * The leader's entries committed here but not yet appended to the central's log (their position,
 * id, changes and the row images before them, to undo them): never captured either. Emptied as the
 * appender's acknowledgements come (src/sync/central/log-appender.ts); a standby holds none.
 */
export const PENDING_TABLE = 'central_log_pending';

export interface TableShape {
  name: string;
  columns: string[];
  /** Columns whose values are blobs: carried as hex text. */
  blobs: Set<string>;
  /** The primary key of a WITHOUT ROWID table; empty for a rowid table. */
  pk: string[];
}

export const q = (id: string) => `"${id.replace(/"/g, '""')}"`;

function tableShapes(db: Db): TableShape[] {
  const tables = db
    .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT IN (?, ?) ORDER BY name")
    .all(LOG_STATE_TABLE, PENDING_TABLE) as Array<{ name: string; sql: string }>;
  return tables.map((t) => {
    const cols = db.prepare(`SELECT name, type, pk, hidden FROM pragma_table_xinfo(?)`).all(t.name) as Array<{
      name: string;
      type: string;
      pk: number;
      hidden: number;
    }>;
    const stored = cols.filter((c) => c.hidden === 0);
    const withoutRowid = /WITHOUT\s+ROWID/i.test(t.sql);
    return {
      name: t.name,
      columns: stored.map((c) => c.name),
      blobs: new Set(stored.filter((c) => /BLOB/i.test(c.type)).map((c) => c.name)),
      pk: withoutRowid
        ? stored
            .filter((c) => c.pk > 0)
            .sort((a, b) => a.pk - b.pk)
            .map((c) => c.name)
        : [],
    };
  });
}

export const shapes = perDb((db: Db) => new Map(tableShapes(db).map((s) => [s.name, s])));

/**
 * The schema's trigger chains, as each table's depth: 0 for a table no trigger writes, 1 for one
 * written by a trigger of a depth-0 table (a count in `list_counts`, a row of `sync_feed`), and so
 * on. A replay writes an entry's tables in that order, so what the schema's triggers do to a row
 * the entry also holds is overwritten by the leader's image, whatever the order of the writes
 * inside the entry.
 */
export const triggerDepths = perDb((db: Db) => {
  const triggers = db.prepare("SELECT tbl_name, sql FROM sqlite_master WHERE type = 'trigger' AND sql IS NOT NULL").all() as Array<{
    tbl_name: string;
    sql: string;
  }>;
  const writes: Array<[from: string, to: string]> = [];
  for (const t of triggers) {
    const body = t.sql.slice(Math.max(0, t.sql.search(/\bBEGIN\b/i)));
    for (const m of body.matchAll(
      /\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE(?:\s+OR\s+\w+)?(?!\s+SET\b)|DELETE\s+FROM)\s+(?:main\.)?(?:"((?:[^"]|"")+)"|(\w+))/gi,
    ))
      writes.push([t.tbl_name, m[1]?.replace(/""/g, '"') ?? m[2]]);
  }
  const depth = new Map<string, number>();
  // Longest chain, bounded: a cycle of triggers ends at the bound (its tables keep write order among themselves).
  for (let pass = 0; pass < 8; pass++) {
    let moved = false;
    for (const [from, to] of writes) {
      const d = Math.min(8, (depth.get(from) ?? 0) + 1);
      if (to !== from && d > (depth.get(to) ?? 0)) {
        depth.set(to, d);
        moved = true;
      }
    }
    if (!moved) break;
  }
  return depth;
});
