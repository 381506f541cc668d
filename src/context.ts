import type { Config } from './config.js';
import type { Db } from './db/database.js';
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import type { Outbox } from './outbox/events.js';
import type { SyncRegistry } from './sync/shared/registry.js';
import type { EventExample } from './events/catalogue.js';

/**
 * What this daemon's modules declared to each other, built once from its module list
 * (`buildRegistry` in modules/index.ts). `sync`: the kinds sync routes to their modules; `events`:
 * the example payloads of the events they emit. The
 * checkouts module adds `checkout` (its hooks, in modules/checkouts/hooks.ts) by declaration
 * merging, as a fastify plugin adds a decorator, so this file names no module.
 */
export interface Registry {
  sync: SyncRegistry;
  /** Test-send payloads the modules declared for the events they emit (`PosdModule.events`). */
  events: ReadonlyMap<string, EventExample>;
}

/**
 * What every module receives: the validated configuration, the one database, the injected clock,
 * the logger, the outbox and the modules' registry. Built once by the composition root (`daemon.ts`) or by a test.
 */
export interface AppContext {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  outbox: Outbox;
  registry: Registry;
  /** Differs on every start: marks in-flight work left behind by a previous process. */
  bootId: string;
  /** Raised once the daemon is stopping: workers end their loops when it aborts. */
  shutdown: AbortSignal;
}
