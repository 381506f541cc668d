import type { AppContext } from '../context.js';
import type { Worker } from '../api/module.js';
import { perDb } from '../db/per-db.js';
import type { PgCore } from './pg-core.js';

/**
 * The PostgreSQL core of a central that runs one, held apart from its code: the core and
 * node-postgres load only when a central with `sync.postgres.url` starts its workers, never at a
 * store's start (node-postgres' first load also pulls in node's own undici, ~40 ms; issue 16).
 */
const cores = perDb(() => ({ current: undefined as PgCore | undefined }));

/** The PostgreSQL core of this central, if it runs one (the status page and metrics read it). */
export function pgCoreOf(ctx: Pick<AppContext, 'db'>): PgCore | undefined {
  return cores(ctx.db).current;
}

export function setPgCore(ctx: Pick<AppContext, 'db'>, core: PgCore): void {
  cores(ctx.db).current = core;
}

/** The core as a worker whose code loads at its start (src/sync/pg-core.ts). */
export function lazyPgCoreWorker(ctx: AppContext): Worker {
  let core: Promise<Worker> | undefined;
  return {
    name: 'sync-pg-core',
    async start() {
      core = import('./pg-core.js').then(({ pgCoreWorker }) => pgCoreWorker(ctx));
      await (await core).start();
    },
    async stop() {
      await (await core)?.stop();
    },
  };
}
