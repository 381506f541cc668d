import type { OriginTotals } from '../../sync/shared/registry.js';
import { intentTotals } from './service.js';

/** Intents of one origin as reconciliation measures: `intents.<type>.<status>` (count, amount). */
export const intentRowTotals: OriginTotals = (db, from, until, origin) =>
  intentTotals({ db }, from, until, origin).map((r) => ({
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    currency: r.currency,
    measure: `intents.${r.type}.${r.status}`,
    count: r.count,
    sum: r.amount_in_cents,
  }));
