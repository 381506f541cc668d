import { randomUUID } from 'node:crypto';
import type { Config } from './config.js';
import { maskedConfig, publicBaseUrl } from './config.js';
import { openDatabase, type Db } from './db/database.js';
import { databaseFile } from './db/paths.js';
import { startCheckpointer, type Checkpointer } from './db/checkpointer.js';
import { systemClock, type Clock } from './clock.js';
import { createLogger, type Logger } from './logger.js';
import { Outbox } from './outbox/events.js';
import { buildApp } from './api/app.js';
import type { ApiApp, PosdModule, Worker } from './api/module.js';
import type { AppContext } from './context.js';
import { MODULES } from './modules/index.js';
import { AccountsService, initInstallation, type Installation } from './accounts/service.js';
import { acquireDaemonLock } from './system/daemon-lock.js';

export interface DaemonOptions {
  config: Config;
  log?: Logger;
  clock?: Clock;
  modules?: readonly PosdModule[];
  /** Called once when this start created the installation, with the keys to show (once). */
  onInstalled?: (installation: Installation, baseUrl: string) => void;
}

export interface Daemon {
  ctx: AppContext;
  app: ApiApp;
  /** `http://host:port` actually listened on (port 0 resolved). */
  url: string;
  stop(): Promise<void>;
}

export function createContext(config: Config, opts: { log?: Logger; clock?: Clock; db?: Db } = {}): AppContext & { abort: AbortController } {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config);
  const db = opts.db ?? openDatabase(databaseFile(config), { synchronous: config.database.synchronous, busyTimeoutMs: config.database.busy_timeout_ms });
  const abort = new AbortController();
  return { config, db, clock, log, outbox: new Outbox(db, clock), bootId: randomUUID(), shutdown: abort.signal, abort };
}

/**
 * The composition root: open the database (migrating it), make the installation on the first run,
 * build the app, listen, start the workers. `stop` undoes it in reverse order, each step on its own
 * so one failure does not leave the database open.
 */
export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  // The pid file marks the data folder as served: `posd restore` refuses while it names a live process.
  const releaseLock = acquireDaemonLock(opts.config);
  let ctx: ReturnType<typeof createContext>;
  try {
    ctx = createContext(opts.config, { log: opts.log, clock: opts.clock });
  } catch (err) {
    releaseLock();
    throw err;
  }
  const { config, log } = ctx;
  const accounts = new AccountsService(ctx.db, ctx.clock, { unifiedSince: config.events.unified_since });
  let installation: Installation | undefined;
  if (!accounts.isInitialised()) {
    installation = initInstallation(accounts, {
      name: 'My store',
      role: config.role,
      country: config.accounts.country,
      defaultCurrency: config.accounts.default_currency,
    });
  }

  const modules = opts.modules ?? MODULES;
  let app: ApiApp;
  try {
    app = await buildApp(ctx, modules);
    await app.listen({ host: config.http.host, port: config.http.port });
  } catch (err) {
    ctx.db.close();
    releaseLock();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.http.port;
  const url = publicBaseUrl(config, port);
  if (installation) opts.onInstalled?.(installation, `${url}/api`);

  const workers: Worker[] = [checkpointWorker(ctx, config), ...modules.flatMap((m) => m.workers?.(ctx) ?? [])];
  for (const w of workers) await w.start();
  // The effective configuration, once, with every secret masked: what a manager needs to read a problem.
  log.info({ config: maskedConfig(config) }, 'configuration');
  log.info({ url: `${url}/api`, role: config.role, data_dir: config.data_dir }, 'posd listening');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      log.info('posd stopping');
      ctx.abort.abort();
      const grace = setTimeout(() => app.server.closeAllConnections(), config.http.shutdown_grace_ms);
      try {
        await app.close();
      } catch (err) {
        log.error({ err }, 'closing the HTTP server failed');
      }
      clearTimeout(grace);
      for (const w of [...workers].reverse()) {
        try {
          await w.stop();
        } catch (err) {
          log.error({ err, worker: w.name }, 'stopping a worker failed');
        }
      }
      try {
        ctx.db.close();
      } catch (err) {
        log.error({ err }, 'closing the database failed');
      }
      releaseLock();
      log.info('posd stopped');
    })());

  return { ctx, app, url, stop };
}

/** The WAL checkpoint thread as a daemon worker: started before the others, stopped after them. */
function checkpointWorker(ctx: AppContext, config: Config): Worker {
  let checkpointer: Checkpointer | undefined;
  return {
    name: 'wal-checkpoint',
    start() {
      // An in-memory database has no WAL and no file another connection could open.
      if (config.database.checkpoint_interval_ms === 0 || ctx.db.memory) return;
      checkpointer = startCheckpointer(ctx.db, {
        file: ctx.db.name,
        intervalMs: config.database.checkpoint_interval_ms,
        synchronous: config.database.synchronous,
        busyTimeoutMs: config.database.busy_timeout_ms,
        log: ctx.log,
      });
    },
    async stop() {
      await checkpointer?.stop();
    },
  };
}
