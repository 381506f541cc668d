import type { Db } from '../../db/database.js';
import { perDb } from '../../db/per-db.js';
import { preparedOnUse } from '../../db/statements.js';

/** At a central: one outage window a store reported (`outage_window` records, ops/outage-sync.ts). */
export interface CentralOutageRow {
  id: string;
  origin_store_id: string;
  account_id: string;
  live_mode: number;
  link: 'central' | 'processor';
  started_at: string;
  ended_at: string;
  /** JSON array of what was taken offline (ops/outage-sync.ts `TakenOfflineRow`). */
  taken_offline: string;
}

const IN_ACCOUNTS = `account_id IN (SELECT value FROM json_each(@accounts)) AND live_mode = @live_mode`;

/** The central's SQL of its stores' outage windows; a store box never runs it (prepared at first use). */
export const centralOutageStore = perDb((db: Db) => {
  const s = preparedOnUse({
    insert: () =>
      db.prepare(`INSERT INTO central_outage_windows (id, origin_store_id, account_id, live_mode, link, started_at, ended_at, taken_offline)
             VALUES (@id, @origin_store_id, @account_id, @live_mode, @link, @started_at, @ended_at, @taken_offline)
             ON CONFLICT DO NOTHING`),
    // A window of the same store and link that shares any time with [from, until).
    overlapping: () =>
      db.prepare(`SELECT * FROM central_outage_windows WHERE origin_store_id = @store AND link = @link
                    AND started_at < @until AND ended_at > @from ORDER BY started_at LIMIT 1`),
    // The windows of the stores a key reads (optionally one store), ending at or after `from`, oldest first.
    inScope: () =>
      db.prepare(`SELECT * FROM central_outage_windows WHERE ${IN_ACCOUNTS} AND (@store IS NULL OR origin_store_id = @store)
                AND ended_at >= @from ORDER BY origin_store_id, started_at, id LIMIT @limit`),
  });
  return {
    /** Returns whether it was new (the same window reported again changes nothing). */
    insert: (row: CentralOutageRow) => s.insert.run(row).changes === 1,
    overlapping: (storeId: string, link: string, fromIso: string, untilIso: string) =>
      s.overlapping.get({ store: storeId, link, from: fromIso, until: untilIso }) as CentralOutageRow | undefined,
    inScope: (scope: { accountIds: string[]; liveMode: boolean }, opts: { storeId: string | null; from: string; limit: number }) =>
      s.inScope.all({
        accounts: JSON.stringify(scope.accountIds),
        live_mode: scope.liveMode ? 1 : 0,
        store: opts.storeId,
        from: opts.from,
        limit: opts.limit,
      }) as CentralOutageRow[],
  };
});
