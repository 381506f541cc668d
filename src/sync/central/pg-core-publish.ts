import type pg from 'pg';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/database.js';
import { logHeld } from '../../db/log-hold.js';
import { centralSide, type FeedRow } from './sync-store.js';
import { coreStore, type DecidedRow } from './core-store.js';
import { originTotals } from '../shared/row-totals.js';
import { knownZone, localDayRange, toSummary } from '../shared/summary.js';
import type { SummaryRow } from '../shared/wire.js';
import { publishAccounts, publishDayTotals, publishKeys, publishOrganizations, type OutcomeOf } from '../pg/index.js';

// What the PostgreSQL core (pg-core.ts) publishes to PostgreSQL: read models, day totals, outcomes.

// Each reads first, then waits for the central's log to hold what it read (src/db/log-hold.ts:
// a chain's leading core publishes nothing a failover could take back), then publishes.

/** Every organization, account and key the core holds, published (a new leader starts with them). */
export async function publishReadModels(db: Db, pool: pg.Pool): Promise<void> {
  const cs = coreStore(db);
  const [orgs, accounts, keys] = [cs.organizations(), cs.accounts(), cs.keys()];
  await logHeld(db);
  await publishOrganizations(pool, orgs);
  await publishAccounts(pool, accounts);
  await publishKeys(pool, keys);
}

/** The read models a batch of feed rows announces (accounts with their sandboxes, keys, their organizations), published before it. */
export async function publishFor(db: Db, pool: pg.Pool, rows: readonly FeedRow[]): Promise<void> {
  const orgs = new Set<string>();
  const accounts = new Set<string>();
  const keys = new Set<string>();
  for (const r of rows) {
    if (r.kind === 'account' && r.object_id) accounts.add(r.object_id);
    else if (r.kind === 'api_key' && r.object_id) keys.add(r.object_id);
    else if (r.kind !== 'organization') continue;
    orgs.add(r.organization_id);
  }
  if (!orgs.size) return;
  const cs = coreStore(db);
  const read = { orgs: cs.organizations([...orgs]), accounts: accounts.size ? cs.accounts([...accounts]) : [], keys: keys.size ? cs.keys([...keys]) : [] };
  await logHeld(db);
  await publishOrganizations(pool, read.orgs);
  if (accounts.size) await publishAccounts(pool, read.accounts);
  if (keys.size) await publishKeys(pool, read.keys);
}

/** The central's own measures of these days of one store, recomputed and published (docs/central.md). */
export async function publishTotals(ctx: AppContext, pool: pg.Pool, storeId: string, days: readonly string[], zone = 'UTC'): Promise<void> {
  if (!days.length) return;
  const rows = days.flatMap((day) => centralMeasures(ctx, storeId, day, zone).map((r) => ({ ...r, day })));
  await logHeld(ctx.db);
  await publishDayTotals(pool, storeId, days, rows);
}

export function outcomesOf(rows: readonly DecidedRow[]): OutcomeOf[] {
  return rows.filter((x) => x.outcome !== 'received').map((x) => ({ seq: x.seq, outcome: x.outcome as OutcomeOf['outcome'], reason: x.reason }));
}

/**
 * What the central itself measures of one store's day, as `centralSummary` does, without
 * `records.*` (the fronts count those at receipt): `events` (the store's event records of the day
 * whose event the central holds), `ledger.<type>`, `ledger.<type>.fee` and
 * `intents.<type>.<status>` (the rows this store's records wrote, dated by their own created_at).
 */
export function centralMeasures(ctx: AppContext, storeId: string, day: string, zone = 'UTC'): SummaryRow[] {
  const { from, until } = localDayRange(day, knownZone(zone) ? zone : 'UTC');
  return ctx.db.transaction(() => [
    ...centralSide(ctx.db).centralEvents(storeId, from, until).map(toSummary),
    ...originTotals(ctx.registry.sync, ctx.db, from, until, storeId),
  ])();
}
