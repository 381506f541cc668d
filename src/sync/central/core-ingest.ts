import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { coreStore } from './core-store.js';
import { publishFrontRefusals } from './checks/refusal.js';

/** One batch of a store's records read from PostgreSQL's `sync_received`, as the core's SQLite keeps them. */
export interface IngestBatch {
  store: Parameters<ReturnType<typeof coreStore>['ingest']>[0] & { store_id: string; account_id: string };
  rows: Parameters<ReturnType<typeof coreStore>['ingest']>[1];
  at: string;
}

/** With `yieldNow`, the records copied between two looks at it. */
const INGEST_STEP = 25;

/**
 * Copies one batch into the core's SQLite `sync_received` (outcome `received`, or a front's
 * refusal kept as decided and told to the box), in one transaction: appended to the central's log
 * before it commits like any other. Run by the projector's thread while it runs
 * (src/projector-thread.ts), else on the caller's connection. `yieldNow` (the thread's: a write of
 * the daemon's waits for the lock) is looked at every INGEST_STEP records: then the transaction
 * commits what it copied so far and the rest goes in the next one, so an `/api` write waits for at
 * most one step and a commit instead of the whole batch. Each part moves `received_seq` to its last
 * record, as a batch of that size would.
 */
export function ingestBatch(ctx: Pick<AppContext, 'db' | 'log' | 'clock'>, b: IngestBatch, yieldNow?: () => boolean): void {
  const store = coreStore(ctx.db);
  const step = yieldNow ? INGEST_STEP : b.rows.length;
  let i = 0;
  do {
    tx(ctx.db, () => {
      const refused: ReturnType<typeof store.ingest> = [];
      do {
        const part = i === 0 && step >= b.rows.length ? b.rows : b.rows.slice(i, i + step);
        for (const r of store.ingest(b.store, part, b.at)) refused.push(r);
        i += part.length;
      } while (i < b.rows.length && !yieldNow?.());
      publishFrontRefusals(ctx, b.store, refused, b.at);
    });
  } while (i < b.rows.length);
}
