import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { perDb } from '../../db/per-db.js';
import type { LogLink } from './projector-host.js';

// The PostgreSQL core of a central that runs one, held apart from its code: the core and
// node-postgres load only when a central with `sync.postgres.url` starts its workers, never at a
// store's start (node-postgres' first load also pulls in node's own undici, ~40 ms; issue 16).

/** What the status page and metrics read of a running core (src/sync/central/pg-core.ts PgCore). */
export interface RunningCore {
  readonly state: { readonly pgReceived: ReadonlyMap<string, number> };
  /** Its place in the central's log, which the projector's thread appends through (projector-host.ts). */
  readonly log_: { threadLink(): LogLink };
}

const cores = perDb(() => ({ current: undefined as RunningCore | undefined, leaderWorkers: (() => []) as () => Worker[] }));

/**
 * The workers of a chain's core that write or reach out (the projector, webhooks, billing...): the
 * daemon hands them here instead of starting them, and the core starts them when it takes the lease
 * and stops them when it loses it. A standby runs none: it only replays the log.
 */
export function setLeaderWorkers(ctx: Pick<AppContext, 'db'>, make: () => Worker[]): void {
  cores(ctx.db).leaderWorkers = make;
}

/** Fresh leader workers for a leadership starting now. */
export function leaderWorkersOf(ctx: Pick<AppContext, 'db'>): Worker[] {
  return cores(ctx.db).leaderWorkers();
}

/** The PostgreSQL core of this central, if it runs one (the status page and metrics read it). */
export function pgCoreOf(ctx: Pick<AppContext, 'db'>): RunningCore | undefined {
  return cores(ctx.db).current;
}

export function setPgCore(ctx: Pick<AppContext, 'db'>, core: RunningCore): void {
  cores(ctx.db).current = core;
}

/** The core as a worker whose code (`load`: src/sync/central/pg-core.ts's pgCoreWorker) loads at its start. */
export function lazyPgCoreWorker(ctx: AppContext, load: () => Promise<(ctx: AppContext) => Worker>): Worker {
  let core: Promise<Worker> | undefined;
  return {
    name: 'sync-pg-core',
    async start() {
      core = load().then((pgCoreWorker) => pgCoreWorker(ctx));
      await (await core).start();
    },
    async stop() {
      await (await core)?.stop();
    },
  };
}

/** The leader workers of one leadership: started when it begins, stopped (in reverse) when it ends. */
export class LeaderWorkers {
  private running: Worker[] = [];

  constructor(private readonly ctx: AppContext) {}

  async start(): Promise<void> {
    for (const w of leaderWorkersOf(this.ctx)) {
      await w.start();
      this.running.push(w);
    }
  }

  async stop(): Promise<void> {
    for (const w of this.running.splice(0).reverse()) {
      try {
        await w.stop();
      } catch (err) {
        this.ctx.log.warn({ err, worker: w.name }, 'sync: a worker of the leading core failed to stop');
      }
    }
  }
}
