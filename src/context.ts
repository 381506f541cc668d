import type { Config } from './config.js';
import type { Db } from './db/database.js';
import type { Clock } from './clock.js';
import type { Logger } from './logger.js';
import type { Outbox } from './outbox/events.js';

/**
 * What every module receives: the validated configuration, the one database, the injected clock,
 * the logger and the outbox. Built once by the composition root (`daemon.ts`) or by a test.
 */
export interface AppContext {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  outbox: Outbox;
  /** Differs on every start: marks in-flight work left behind by a previous process. */
  bootId: string;
  /** Raised once the daemon is stopping: workers end their loops when it aborts. */
  shutdown: AbortSignal;
}
