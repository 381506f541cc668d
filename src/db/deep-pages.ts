import type Database from 'better-sqlite3';
import type { Db } from './database.js';
import { dataVersionReader } from './data-version.js';
import { perDb } from './per-db.js';

/**
 * Deep pages of a list at the cost of its first (issue 38; decision 0310). The hosted API pages
 * by `page` and `items`, an OFFSET, and SQLite walks an offset row by row along the index: page
 * 50,000 of a 1,000,000-row list took 57-212 ms where the first took 0.07. Each page read here
 * gives the very rows the list's OFFSET statement would, read the cheapest of four ways:
 *
 * - by its offset (the list's own statement);
 * - on from a row whose place in the list is known, newest first (the page a `next` link names);
 * - back from a known row after the page, oldest first (the page a `prev` link names);
 * - from the list's end, oldest first, when its count is known (the `last` link and its
 *   neighbours). The count and the rows must then come from one state of the file.
 *
 * A row's place is known from the pages read before (the keys of the row before each page, its
 * first and its last), and only while nothing at all was committed to the file since, by this
 * connection or any other: a write anywhere forgets every place, and pages are read by their
 * offset again. A page jumped to by number in the middle of a list still costs its offset.
 * Pages shallower than DEEP rows are left to the list's own statement: nothing to gain there.
 */
export const DEEP = 1000;

/** Known places: parameter sets per statement, and rows per parameter set. */
const MAX_LISTS = 256;
const MAX_POSITIONS = 64;

/** How deep pages were read since the process started: what a test or a profile asks. */
export const deepPageReads = { offset: 0, on: 0, back: 0, end: 0 };

type Args = unknown[] | Record<string, unknown>;
type Row = Record<string, unknown>;

interface Forms {
  /** The order's columns, every one descending; a row's key is its values of them. */
  columns: string[];
  named: boolean;
  offset: Database.Statement;
  /** Newest first, after a row's key. */
  on: Database.Statement;
  /** Oldest first, before a row's key. */
  back: Database.Statement;
  /** Oldest first. */
  reversed: Database.Statement;
  /** Per parameter set: the file's state they were read in, and position -> key of the row there. */
  known: Map<string, { mark: string; at: Map<number, unknown[]> }>;
}

// `SELECT … WHERE … [UNION ALL SELECT … WHERE …] ORDER BY a DESC, b DESC LIMIT ? OFFSET ?` (or
// `@limit`, `@offset`): a list, or a merge of lists each read from its own index (GET /transfers).
const SHAPE = /^\s*([\s\S]+?)\s+ORDER BY\s+([\w\s,]+?)\s+LIMIT\s+(\?|@limit)\s+OFFSET\s+(\?|@offset)\s*$/i;
const ARM = /^\s*(SELECT\s[\s\S]+?\sFROM\s+\w+\s+WHERE\s)([\s\S]+)$/i;

function formsOf(db: Db, sql: string): Forms | null {
  const m = SHAPE.exec(sql);
  if (!m) return null;
  const [, body, order, limit] = m;
  const terms = order!.split(',').map((t) => t.trim().split(/\s+/));
  // Only a key the rows carry (`SELECT *` has no rowid unless it is a column) and one direction.
  if (terms.some((t) => t.length !== 2 || t[1]!.toUpperCase() !== 'DESC' || t[0]!.toLowerCase() === 'rowid')) return null;
  const arms = body!.split(/\s+UNION ALL\s+/i).map((arm) => ARM.exec(arm));
  const named = limit === '@limit';
  // A positional key would be bound once per arm: a merge of lists is taken only with named ones.
  if (arms.some((a) => !a) || (!named && arms.length > 1)) return null;
  const columns = terms.map((t) => t[0]!);
  const tuple = (xs: string[]) => (xs.length === 1 ? xs[0] : `(${xs.join(', ')})`);
  const page = named ? 'LIMIT @limit OFFSET @offset' : 'LIMIT ? OFFSET ?';
  const desc = columns.map((c) => `${c} DESC`).join(', ');
  const asc = columns.map((c) => `${c} ASC`).join(', ');
  const plain = arms.map((a) => `${a![1]}(${a![2]})`).join(' UNION ALL ');
  const beside = (a: RegExpExecArray, op: string) => `${a[1]}(${a[2]}) AND ${tuple(columns)} ${op} ${tuple(columns.map((_, i) => (named ? `@__k${i}` : '?')))}`;
  return {
    columns,
    named,
    offset: db.prepare(`${plain} ORDER BY ${desc} ${page}`),
    on: db.prepare(`${arms.map((a) => beside(a!, '<')).join(' UNION ALL ')} ORDER BY ${desc} ${page}`),
    back: db.prepare(`${arms.map((a) => beside(a!, '>')).join(' UNION ALL ')} ORDER BY ${asc} ${page}`),
    reversed: db.prepare(`${plain} ORDER BY ${asc} ${page}`),
    known: new Map(),
  };
}

interface PerDb {
  forms: Map<string, Forms | null>;
  /** Moves whenever anything is committed to the file, by this connection or any other. */
  mark: () => string;
}

const perDbState = perDb((db): PerDb => {
  const version = dataVersionReader(db);
  const changes = db.prepare('SELECT total_changes()').pluck();
  return { forms: new Map(), mark: () => `${version()}.${changes.get() as number}` };
});

/**
 * A deep page of the list whose own statement is `sql` (read with `args` before its limit and
 * offset), or `undefined` when `sql` is not of the shape this handles (the caller reads it as
 * before). `count`, when given, is the list's Total-Count; it is then read here, in the same
 * state as the rows when that matters, and returned.
 */
export function deepPage<T>(db: Db, sql: string, args: Args, limit: number, offset: number, count?: () => number): { rows: T[]; total?: number } | undefined {
  const state = perDbState(db);
  let forms = state.forms.get(sql);
  if (forms === undefined) state.forms.set(sql, (forms = formsOf(db, sql)));
  if (!forms || offset < 1) return undefined;
  const f = forms;
  const id = JSON.stringify(args);
  const mark = state.mark();
  let known = f.known.get(id);
  if (known && known.mark !== mark) {
    f.known.delete(id);
    known = undefined;
  }
  const total = count?.();
  // Positions count from the list's first row (0). The page is [offset, end); each way reads the
  // row just before it too (offset - 1), so the page its `next` link names is read on from there.
  const end = offset + limit;
  let behind: number | undefined;
  let ahead: number | undefined;
  for (const at of known?.at.keys() ?? []) {
    if (at < offset && (behind === undefined || at > behind)) behind = at;
    if (at >= end && (ahead === undefined || at < ahead)) ahead = at;
  }
  const ways: Array<[cost: number, way: Way]> = [[offset, 'offset']];
  if (behind !== undefined) ways.push([offset - 1 - behind, 'on']);
  if (ahead !== undefined) ways.push([ahead - end, 'back']);
  if (total !== undefined) ways.push([Math.max(0, total - end), 'end']);
  const way = ways.reduce((a, b) => (b[0] < a[0] ? b : a))[1];
  deepPageReads[way]++;
  let got: Row[];
  let first: number;
  if (way === 'offset') {
    got = read(f, f.offset, args, [], limit + 1, offset - 1);
    first = offset - 1;
  } else if (way === 'on') {
    // The rows after a known one, newest first: skip to the row before the page.
    first = Math.max(offset - 1, behind! + 1);
    got = read(f, f.on, args, known!.at.get(behind!)!, end - first, first - behind! - 1);
  } else {
    // Read from the far side, oldest first: from a known row after the page, or from the list's end.
    const from = way === 'back' ? ahead! : total!;
    const last = Math.min(end, from) - 1;
    if (last < offset) return { rows: [], total };
    const take = last - offset + 2;
    got = way === 'back' ? read(f, f.back, args, known!.at.get(ahead!)!, take, from - 1 - last) : read(f, f.reversed, args, [], take, from - 1 - last);
    got.reverse();
    first = offset - 1;
    // From the end, the count and the rows must describe one state of the file.
    if (way === 'end' && (state.mark() !== mark || got.length !== take)) {
      return { rows: read(f, f.offset, args, [], limit, offset) as T[], total };
    }
  }
  if (state.mark() === mark) remember(f, id, mark, first, got, offset);
  return { rows: got.slice(offset - first, offset - first + limit) as T[], total };
}

type Way = 'offset' | 'on' | 'back' | 'end';

function read(f: Forms, stmt: Database.Statement, args: Args, key: unknown[], limit: number, offset: number): Row[] {
  if (f.named) {
    const named: Record<string, unknown> = { ...(args as Record<string, unknown>), limit, offset };
    key.forEach((v, i) => {
      named[`__k${i}`] = v;
    });
    return stmt.all(named) as Row[];
  }
  return stmt.all(...(args as unknown[]), ...key, limit, offset) as Row[];
}

/** Keeps the keys of the rows read at positions `first`, `offset` (the page's first) and the last. */
function remember(f: Forms, id: string, mark: string, first: number, got: Row[], offset: number): void {
  if (got.length === 0) return;
  let known = f.known.get(id);
  if (!known) {
    if (f.known.size >= MAX_LISTS) f.known.delete(f.known.keys().next().value!);
    f.known.set(id, (known = { mark, at: new Map() }));
  }
  const k = known;
  for (const at of new Set([first, offset, first + got.length - 1])) {
    const row = got[at - first];
    if (!row) continue;
    const key = f.columns.map((c) => row[c]);
    // A NULL compares as neither less nor more: a key holding one cannot mark a place.
    if (key.some((v) => v === null || v === undefined)) continue;
    if (k.at.size >= MAX_POSITIONS && !k.at.has(at)) k.at.delete(k.at.keys().next().value!);
    k.at.set(at, key);
  }
}
