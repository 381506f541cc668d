import type { Db } from '../db/database.js';
import { intentTotals } from '../modules/intents/service.js';
import { ledgerTotals } from '../modules/ledger/service.js';
import type { SummaryRow } from './wire.js';

/**
 * Ledger and intent totals of one origin (`rowOrigin`) for [from, until), as reconciliation
 * measures: `ledger.<type>` (count, amount), `ledger.<type>.fee` (count, fee) and
 * `intents.<type>.<status>` (count, amount), per account, environment and currency.
 */
export function originTotals(db: Db, from: string, until: string, origin: string | null): SummaryRow[] {
  const rows: SummaryRow[] = [];
  for (const r of ledgerTotals({ db }, from, until, origin)) {
    const base = { account_id: r.account_id, live_mode: r.live_mode === 1, currency: r.currency };
    rows.push({ ...base, measure: `ledger.${r.type}`, count: r.count, sum: r.amount_in_cents });
    rows.push({ ...base, measure: `ledger.${r.type}.fee`, count: r.count, sum: r.fee_in_cents });
  }
  for (const r of intentTotals({ db }, from, until, origin)) {
    rows.push({ account_id: r.account_id, live_mode: r.live_mode === 1, currency: r.currency, measure: `intents.${r.type}.${r.status}`, count: r.count, sum: r.amount_in_cents });
  }
  return rows;
}
