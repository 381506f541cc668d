import type { OriginTotals } from '../../sync/shared/registry.js';
import { ledgerTotals } from './service.js';

/** Ledger rows of one origin as reconciliation measures: `ledger.<type>` (count, amount) and `ledger.<type>.fee` (count, fee). */
export const ledgerRowTotals: OriginTotals = (db, from, until, origin) =>
  ledgerTotals({ db }, from, until, origin).flatMap((r) => {
    const base = { account_id: r.account_id, live_mode: r.live_mode === 1, currency: r.currency };
    return [
      { ...base, measure: `ledger.${r.type}`, count: r.count, sum: r.amount_in_cents },
      { ...base, measure: `ledger.${r.type}.fee`, count: r.count, sum: r.fee_in_cents },
    ];
  });
