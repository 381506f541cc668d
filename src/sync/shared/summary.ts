import { isoTime } from '../../clock.js';
import type { SyncRegistry } from './registry.js';
import type { SummaryRow } from './wire.js';

/** A fact as reconciliation reads it, at either side (the store's outbox, the central's received log). */
export interface FactRow {
  account_id: string;
  live_mode: number;
  kind: string;
  payload: string;
}

export interface CountSum {
  account_id: string;
  live_mode: number;
  currency: string;
  measure: string;
  count: number;
  sum: number;
}

export function toSummary(r: { account_id: string; live_mode: number; currency: string; measure: string; count: number; sum: number }): SummaryRow {
  return { account_id: r.account_id, live_mode: r.live_mode === 1, currency: r.currency, measure: r.measure, count: r.count, sum: r.sum };
}

export function dayRange(day: string): { from: string; until: string } {
  const start = Date.parse(`${day}T00:00:00.000Z`);
  return { from: isoTime(start), until: isoTime(start + 86_400_000) };
}

/** Count and amount of facts per account, environment, currency and kind (`records.<kind>`), by each kind's rule. */
export function factTotals(registry: SyncRegistry, rows: FactRow[]): SummaryRow[] {
  const out = new Map<string, SummaryRow>();
  for (const r of rows) {
    const t = registry.totalsOf(r.kind, JSON.parse(r.payload));
    const currency = t?.currency ?? '';
    const key = `${r.account_id}|${r.live_mode}|${currency}|${r.kind}`;
    let row = out.get(key);
    if (!row) {
      row = { account_id: r.account_id, live_mode: r.live_mode === 1, currency, measure: `records.${r.kind}`, count: 0, sum: 0 };
      out.set(key, row);
    }
    row.count++;
    row.sum += t?.amount_in_cents ?? 0;
  }
  return [...out.values()];
}
