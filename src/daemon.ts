import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import type { Config } from './config.js';
import { maskedConfig, publicBaseUrl } from './config.js';
import { openDatabase, type Db } from './db/database.js';
import { databaseFile } from './db/paths.js';
import { startCheckpointer, type Checkpointer } from './db/checkpointer.js';
import { watchDiskFull } from './db/disk-full.js';
import { systemClock, type Clock } from './clock.js';
import { createLogger, type Logger } from './logger.js';
import { Outbox } from './outbox/events.js';
import { buildApp, closeHttpApp, stopOnce } from './api/app.js';
import type { ApiApp, PosdModule, Worker } from './api/module.js';
import type { AppContext } from './context.js';
import { MODULES, buildRegistry } from './modules/index.js';
import { AccountsService, initInstallation, type Installation } from './accounts/service.js';
import { setLeaderWorkers } from './sync/central/pg-core-slot.js';
import { coreProjector } from './sync/central/projector-host.js';
import { acquireDaemonLock } from './system/daemon-lock.js';
import { tlsEnabled } from './config.js';
import { ServerTls } from './system/tls/server-tls.js';
import { releaseYoungGeneration } from './system/young-generation.js';

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
  /** `http://host:port` (or `https://` under TLS) actually listened on (port 0 resolved). */
  url: string;
  /** The certificate posd listens with, when TLS is on (src/system/tls/server-tls.ts). */
  tls?: ServerTls;
  /** Resolves false when a step of the stop failed (each is logged): the process should exit non-zero. */
  stop(): Promise<boolean>;
}

/** A worker's `start` threw: the daemon has stopped whatever had started, and does not run. */
export class WorkerStartError extends Error {
  constructor(
    readonly worker: string,
    cause: unknown,
  ) {
    super(`the ${worker} worker failed to start: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'WorkerStartError';
  }
}

/** A context on the configured database; `modules` (default: every module) make its registry. */
export function createContext(
  config: Config,
  opts: { log?: Logger; clock?: Clock; db?: Db; modules?: readonly PosdModule[] } = {},
): AppContext & { abort: AbortController } {
  const clock = opts.clock ?? systemClock;
  const registry = buildRegistry(opts.modules ?? MODULES);
  const log = opts.log ?? createLogger(config);
  const db = opts.db ?? openDatabase(databaseFile(config), { synchronous: config.database.synchronous, busyTimeoutMs: config.database.busy_timeout_ms });
  const abort = new AbortController();
  return { config, db, clock, log, outbox: new Outbox(db, clock), registry, bootId: randomUUID(), shutdown: abort.signal, abort };
}

/**
 * The composition root: open the database (migrating it), make the installation on the first run,
 * build the app, listen, start the workers. Whatever fails on the way undoes what had started, as
 * `stop` does: the port closed, the workers started so far stopped, the database closed, the data
 * folder released. `stop` undoes it in reverse order, each step on its own so one failure does not
 * leave the database open.
 */
export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  const role = opts.config.role;
  // A central-front holds no data folder: it runs src/front.ts (startFront), never this daemon.
  if (role === 'central-front') throw new Error('a central-front does not run the daemon: start it with startFront (src/front.ts)');
  // The pid file marks the data folder as served: `posd restore` refuses while it names a live process.
  const releaseLock = acquireDaemonLock(opts.config);
  const modules = opts.modules ?? MODULES;
  let ctx: ReturnType<typeof createContext>;
  try {
    ctx = createContext(opts.config, { log: opts.log, clock: opts.clock, modules });
  } catch (err) {
    releaseLock();
    throw err;
  }
  const { config, log } = ctx;
  let app: ApiApp | undefined;
  let tls: ServerTls | undefined;
  // A worker is listed before its start runs, so one that throws half-way is stopped too.
  const started: Worker[] = [];

  /** Undoes what has started, in reverse order, each step on its own; false when one failed. */
  const halt = async (): Promise<boolean> => {
    let clean = true;
    ctx.abort.abort();
    tls?.stop();
    if (app && !(await closeHttpApp(app, config.http.shutdown_grace_ms, log))) clean = false;
    for (const w of [...started].reverse()) {
      try {
        await w.stop();
      } catch (err) {
        clean = false;
        log.error({ err, worker: w.name }, 'stopping a worker failed');
      }
    }
    try {
      ctx.db.close();
    } catch (err) {
      clean = false;
      log.error({ err }, 'closing the database failed');
    }
    releaseLock();
    return clean;
  };

  let url: string;
  try {
    const accounts = new AccountsService(ctx.db, ctx.clock, { unifiedSince: config.events.unified_since });
    // The box CA and its server certificate are made (or renewed) before the port opens.
    if (tlsEnabled(config)) tls = await ServerTls.start(config, ctx.clock, log);
    app = await buildApp(ctx, modules, { tls: tls?.material });
    await app.listen({ host: config.http.host, port: config.http.port });
    tls?.attach(app.server as never);
    // Made only once the port is ours: a start that cannot listen must not create keys it never shows.
    let installation: Installation | undefined;
    // A chain's core takes its installation from the central's log: one made here would be a second
    // organization no other core has. The first core is made with `posd init` (README).
    const chainCore = config.role === 'central' && config.sync.postgres.url !== '';
    if (!accounts.isInitialised() && !chainCore) {
      installation = initInstallation(accounts, {
        name: 'My store',
        role,
        country: config.accounts.country,
        defaultCurrency: config.accounts.default_currency,
      });
    }
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.http.port;
    url = publicBaseUrl(config, port);
    if (installation) opts.onInstalled?.(installation, `${url}/api`);

    let workers = modules.flatMap((m) => m.workers?.(ctx) ?? []);
    if (chainCore) {
      // A chain's core starts only its place in the log; the rest run while it leads (src/sync/pg-core.ts).
      // Workers are not restartable: a later leadership of this process makes fresh ones.
      let first: Worker[] | undefined = workers.filter((w) => w.name !== 'sync-pg-core');
      setLeaderWorkers(ctx, () => {
        const made = first ?? modules.flatMap((m) => m.workers?.(ctx) ?? []).filter((w) => w.name !== 'sync-pg-core');
        first = undefined;
        // With sync.postgres.projector_thread the projector runs on its own thread, off the loop that answers /api.
        if (!config.sync.postgres.projector_thread) return made;
        return made.map((w) => (w.name === 'sync-projector' ? coreProjector(ctx, new URL('./projector-thread.js', import.meta.url)) : w));
      });
      workers = workers.filter((w) => w.name === 'sync-pg-core');
    }
    for (const w of [checkpointWorker(ctx, config), ...workers]) {
      started.push(w);
      try {
        await w.start();
      } catch (err) {
        throw new WorkerStartError(w.name, err);
      }
    }
  } catch (err) {
    log.error({ err }, 'posd failed to start; stopping what had started');
    await halt();
    throw err;
  }
  const listening = app;
  // The effective configuration, once, with every secret masked: what a manager needs to read a problem.
  // At debug: at info its 150 lines pushed the first start's keys off the screen.
  log.debug({ config: maskedConfig(config) }, 'configuration');
  log.info({ url: `${url}/api`, role: config.role, data_dir: config.data_dir, tls: tls ? tls.status : 'off' }, 'posd listening');
  releaseYoungGeneration();
  watchDiskFull(ctx.db, (state, previous) => {
    if (state)
      log.error(
        { data_dir: config.data_dir },
        'disk full: writes are refused (507 disk_full), reads go on; free space on that disk and writes resume by themselves',
      );
    else log.warn({ data_dir: config.data_dir, refused: previous?.refused }, 'disk has room again: writes resume');
  });

  const stop = stopOnce(log, halt);

  return { ctx, app: listening, url, tls, stop };
}

/**
 * The WAL checkpoint thread as a daemon worker: started before the others, stopped after them.
 * The thread itself starts once the WAL first holds a page (checked every interval with one stat
 * of the -wal file): until a first write there is nothing to checkpoint, and an idle box is spared
 * a thread, its V8 heap and its connection, about 10 MB (issue 16: idle RSS under 100 MB). A WAL
 * left by a crash starts it at once.
 */
function checkpointWorker(ctx: AppContext, config: Config): Worker {
  let checkpointer: Checkpointer | undefined;
  let waiting: NodeJS.Timeout | undefined;
  return {
    name: 'wal-checkpoint',
    start() {
      // An in-memory database has no WAL and no file another connection could open.
      if (config.database.checkpoint_interval_ms === 0 || ctx.db.memory) return;
      const begin = () => {
        ctx.log.debug('WAL checkpoint thread starting: the WAL holds pages');
        checkpointer = startCheckpointer(ctx.db, {
          file: ctx.db.name,
          intervalMs: config.database.checkpoint_interval_ms,
          synchronous: config.database.synchronous,
          busyTimeoutMs: config.database.busy_timeout_ms,
          log: ctx.log,
        });
      };
      const wal = `${ctx.db.name}-wal`;
      const written = () => (statSync(wal, { throwIfNoEntry: false })?.size ?? 0) > 0;
      if (written()) return begin();
      waiting = setInterval(() => {
        if (!written()) return;
        clearInterval(waiting);
        waiting = undefined;
        begin();
      }, config.database.checkpoint_interval_ms);
      waiting.unref();
    },
    async stop() {
      clearInterval(waiting);
      await checkpointer?.stop();
    },
  };
}
