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

/**
 * Copies one batch into the core's SQLite `sync_received` (outcome `received`, or a front's
 * refusal kept as decided and told to the box), in one transaction: appended to the central's log
 * before it commits like any other. Run by the projector's thread while it runs
 * (src/projector-thread.ts), else on the caller's connection.
 */
export function ingestBatch(ctx: Pick<AppContext, 'db' | 'log' | 'clock'>, b: IngestBatch): void {
  tx(ctx.db, () => publishFrontRefusals(ctx, b.store, coreStore(ctx.db).ingest(b.store, b.rows, b.at), b.at));
}
