import type { Db } from '../../db/database.js';
import type { SyncRegistry } from './registry.js';
import type { SummaryRow } from './wire.js';

/**
 * Ledger and intent totals of one origin (`rowOrigin`) for [from, until), as reconciliation
 * measures: `ledger.<type>` (count, amount), `ledger.<type>.fee` (count, fee) and
 * `intents.<type>.<status>` (count, amount), per account, environment and currency. The ledger and
 * intents modules declare them (`sync.totals`); sync only gathers them.
 */
export function originTotals(registry: SyncRegistry, db: Db, from: string, until: string, origin: string | null): SummaryRow[] {
  return registry.rowTotals().flatMap((fn) => fn(db, from, until, origin));
}
