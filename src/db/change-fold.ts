import type { RowChange } from './change-shapes.js';

/**
 * One change per key: what a transaction's captured writes come to (src/db/change-capture.ts),
 * what a replay applies (src/db/change-replay.ts) and what an undo restores. An entry holds, for
 * each key it touched, the row after it (whole, an update of the changed columns, or a delete)
 * and the row before it (whole, those columns, or none), so it replays and undoes in any order.
 */

/** A captured write: table, key (JSON text), op (i, u, d), the row after, the row before (JSON text; an update's: changed columns only). */
export type Captured = [tbl: string, k: string, op: string, img: string | null, prior: string | null];

type Row = Record<string, unknown>;

/** A change's table and key as one text (its place in a map of changes). */
export const changeId = (table: string, key: number | unknown[]) => `${table}\u0000${typeof key === 'number' ? key : JSON.stringify(key)}`;

/**
 * A key's writes in capture order folded into its change and undo: the last image and the first
 * before-image, column by column; null when the key ends as it began (inserted then deleted, or
 * its columns set back). An update's columns are overlaid on the row the entry inserted, and its
 * before values taken from the first write that knew them (an update's changed columns, then a
 * delete's whole row).
 */
function foldKey(writes: readonly Captured[]): [RowChange, RowChange] | null {
  const table = writes[0][0];
  const key = JSON.parse(writes[0][1]) as number | unknown[];
  const existed = writes[0][2] !== 'i';
  let exists = existed;
  let after: Row = Object.create(null);
  let afterWhole = false;
  const before: Row = Object.create(null);
  let beforeKnown = !existed;
  for (const [, , op, img, prior] of writes) {
    if (!beforeKnown && prior !== null) {
      const p = JSON.parse(prior) as Row;
      for (const c of Object.keys(p)) if (!Object.hasOwn(before, c)) before[c] = p[c];
      if (op === 'd') beforeKnown = true;
    }
    if (op === 'i') {
      after = Object.assign(Object.create(null), JSON.parse(img!) as Row);
      afterWhole = exists = true;
    } else if (op === 'u') Object.assign(after, JSON.parse(img!) as Row);
    else {
      after = Object.create(null);
      afterWhole = exists = false;
    }
  }
  if (!existed)
    return exists
      ? [
          [table, key, after],
          [table, key, null],
        ]
      : null;
  if (!exists)
    return [
      [table, key, null],
      [table, key, before],
    ];
  // Deleted and inserted again: a whole row each way (a delete's before-image is whole).
  if (afterWhole)
    return [
      [table, key, after],
      [table, key, before],
    ];
  for (const c of Object.keys(after))
    if (after[c] === before[c]) {
      delete after[c];
      delete before[c];
    }
  return Object.keys(after).length
    ? [
        [table, key, after, 1],
        [table, key, before, 1],
      ]
    : null;
}

/**
 * The captured writes of one transaction as the log's JSON text (one change per key, in the order
 * each key was first written) and the undo of each: null when nothing is left. A key written once
 * (nearly all of them) is passed through as the triggers wrote it, without parsing.
 */
export function foldCaptured(rows: readonly Captured[]): { json: string; count: number; undo: string } | null {
  const groups = new Map<string, number | number[]>();
  for (let i = 0; i < rows.length; i++) {
    const id = `${rows[i][0]}\u0000${rows[i][1]}`;
    const g = groups.get(id);
    if (g === undefined) groups.set(id, i);
    else if (typeof g === 'number') groups.set(id, [g, i]);
    else g.push(i);
  }
  let json = '[';
  let undo = '[';
  let count = 0;
  for (const g of groups.values()) {
    let fwd: string;
    let back: string;
    if (typeof g === 'number') {
      const [tbl, k, op, img, prior] = rows[g];
      const t = JSON.stringify(tbl);
      if (op === 'u') {
        fwd = `[${t},${k},${img},1]`;
        back = `[${t},${k},${prior},1]`;
      } else {
        fwd = `[${t},${k},${img ?? 'null'}]`;
        back = `[${t},${k},${prior ?? 'null'}]`;
      }
    } else {
      const folded = foldKey(g.map((i) => rows[i]));
      if (!folded) continue;
      fwd = JSON.stringify(folded[0]);
      back = JSON.stringify(folded[1]);
    }
    json += count ? `,${fwd}` : fwd;
    undo += count ? `,${back}` : back;
    count++;
  }
  return count ? { json: `${json}]`, count, undo: `${undo}]` } : null;
}

/**
 * Changes to replay with one per key, in the order each key first came: a later whole row or
 * delete replaces an earlier change, a later update is overlaid on it. An entry from before the
 * update form (a change per write) comes to its last image per key; an entry made since has one
 * change per key and is returned as it is.
 */
export function lastPerKey(changes: readonly RowChange[]): readonly RowChange[] {
  const at = new Map<string, number>();
  let out: RowChange[] | undefined;
  for (let i = 0; i < changes.length; i++) {
    const c = changes[i];
    const id = changeId(c[0], c[1]);
    const j = at.get(id);
    if (j === undefined) {
      at.set(id, out ? out.push(c) - 1 : i);
      continue;
    }
    out ??= changes.slice(0, i);
    const was = out[j];
    if (c[3] === 1 && was[2] !== null) out[j] = [c[0], c[1], { ...was[2], ...c[2] }, ...(was[3] === 1 ? ([1] as const) : ([] as const))];
    else out[j] = c;
  }
  return out ?? changes;
}

/**
 * Folds an entry's undo into the rows before a run of entries (oldest first), keyed by table and
 * key: the first entry's before-row stands; a later entry only adds the columns the first did not
 * change (their values before the later entry are those before the first), or, when it knew the
 * whole row, makes it whole.
 */
export function addBefore(priors: Map<string, RowChange>, change: RowChange): void {
  const id = changeId(change[0], change[1]);
  const was = priors.get(id);
  if (!was) priors.set(id, change);
  else if (was[3] === 1 && change[2] !== null)
    priors.set(id, [was[0], was[1], { ...change[2], ...was[2] }, ...(change[3] === 1 ? ([1] as const) : ([] as const))]);
}
