import type { Db } from '../db/database.js';
import { intentsHighWater, intentTotals, markIntentOrigin } from '../modules/intents/service.js';
import { ledgerHighWater, ledgerTotals, markLedgerOrigin } from '../modules/ledger/service.js';
import type { SummaryRow } from './wire.js';

/**
 * Where a ledger row or an intent came from, so that reconciliation compares the same rows on both
 * sides whatever else each side holds: NULL on the box that wrote it; at the central, the store_id
 * whose pushed record wrote it; at a store, `FEED_ORIGIN` for rows the central's feed brought.
 */
export const FEED_ORIGIN = 'central';

interface OriginMark {
  ledger: number;
  intents: number;
}

/**
 * Runs `write` (inside the caller's transaction) and stamps `origin` on every ledger row and intent
 * it created. Nothing else writes in between: better-sqlite3 is synchronous and SQLite lets one
 * writer hold the database, so the rows past the marks are exactly `write`'s. Appliers and feed
 * appliers need not know about origins at all.
 */
export function withOrigin<T>(db: Db, origin: string, write: () => T): T {
  if (!db.inTransaction) throw new Error('withOrigin must run inside the transaction that writes the rows');
  const mark: OriginMark = { ledger: ledgerHighWater({ db }), intents: intentsHighWater({ db }) };
  const result = write();
  markLedgerOrigin({ db }, mark.ledger, origin);
  markIntentOrigin({ db }, mark.intents, origin);
  return result;
}

/**
 * Ledger and intent totals of one origin for [from, until), as reconciliation measures:
 * `ledger.<type>` (count, amount), `ledger.<type>.fee` (count, fee) and `intents.<type>.<status>`
 * (count, amount), per account, environment and currency.
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
