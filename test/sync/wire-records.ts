/** A box's outbox rows as the wire's records, and the forged cash sales the hostile-box tests push. */

/** An outbox row as SQLite holds it. */
export interface OutboxRow {
  seq: number;
  id: string;
  kind: string;
  account_id: string;
  live_mode: number;
  payload: string;
  created_at: string;
}

/** A record on the wire, without its place in the chain (`seq`, `prev_seq`). */
export type WireRecord = {
  id: string;
  kind: string;
  account_id: string;
  live_mode: boolean;
  payload: Record<string, any>;
  created_at: string;
};

/** The record an outbox row becomes on the wire (the caller gives `seq` and `prev_seq`). */
export function wireRecord(r: Omit<OutboxRow, 'seq'>): WireRecord {
  return { id: r.id, kind: r.kind, account_id: r.account_id, live_mode: r.live_mode === 1, payload: JSON.parse(r.payload), created_at: r.created_at };
}

/**
 * A cash sale like `template` under fresh ids tagged `tag` and numbered `i`, with `change` applied to
 * its payload and `over` to the record: one forged sale of a hostile box.
 */
export function forgedCashSale(
  template: WireRecord,
  tag: string,
  i: number,
  change: (p: Record<string, any>) => void = () => {},
  over: Partial<WireRecord> = {},
): WireRecord {
  const p = structuredClone(template.payload);
  p.sale.id = `int_${tag}${i}`;
  p.sale.checkout.id = `chk_${tag}${i}`;
  p.cash_intent.id = `ci_${tag}${i}`;
  p.cash_intent.intent_id = p.sale.id;
  change(p);
  return { ...template, id: `sync_${tag}${i}`, payload: p, created_at: new Date().toISOString(), ...over };
}
