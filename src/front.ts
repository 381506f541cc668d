import type pg from 'pg';
import type { Config } from './config.js';
import { publicBaseUrl, tlsEnabled } from './config.js';
import { ServerTls } from './system/tls/server-tls.js';
import { systemClock, type Clock } from './clock.js';
import { createLogger, type Logger } from './logger.js';
import { closeHttpApp, createHttpApp, stopOnce } from './api/app.js';
import type { ApiApp } from './api/module.js';
import { SyncRegistry } from './sync/shared/registry.js';
import { createPool, FeedWaiter, migrate } from './sync/pg/index.js';
import { frontNotFound, frontRoutes } from './sync/pg/front-routes.js';
import { releaseYoungGeneration } from './system/young-generation.js';

export interface FrontOptions {
  config: Config;
  log?: Logger;
  clock?: Clock;
}

export interface Front {
  app: ApiApp;
  log: Logger;
  /** `http://host:port` (or `https://` under TLS) actually listened on (port 0 resolved). */
  url: string;
  /** Resolves false when a step of the stop failed (each is logged). */
  stop(): Promise<boolean>;
}

/** A central-front cannot start (no `sync.postgres.url`, PostgreSQL unreachable): one line for the operator. */
export class FrontStartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FrontStartError';
  }
}

/** How long a request waits for a pooled connection (or a new one) before answering 503. */
const CONNECT_TIMEOUT_MS = 5000;

/** The URI as it may be printed: its password masked. */
export function maskedPgUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:/@]*:)[^@]*@/i, '$1****@');
}

/**
 * The `records.<kind>` totals rule and the receipt checks' declarations (schema, rules, amounts) of
 * every kind, as the core's registry has them. They live in
 * the modules' sync declarations, so the modules' code is loaded (no database is opened, no service
 * built, no worker started: `SyncRegistry` only reads the declarations).
 */
async function syncTotals(): Promise<Pick<SyncRegistry, 'totalsOf' | 'pushKind'>> {
  const { MODULES } = await import('./modules/index.js');
  return new SyncRegistry(MODULES);
}

/**
 * The composition root of a central-front (`posd serve --role central-front`, docs/central.md):
 * a stateless process that serves the store boxes' protocol (`/sync/*`) from PostgreSQL. No data
 * folder, no SQLite, no workers: a pool (`sync.postgres.pool_max`), one LISTEN connection for the
 * feed's doorbell, and the HTTP app. Start: the sync tables are made if missing (idempotent, under
 * an advisory lock), then the doorbell listens, then the port; a PostgreSQL that does not answer at
 * start stops the start (`FrontStartError`); once running, the pool and the doorbell reconnect by
 * themselves and requests answer 503 `sync_database_unavailable` meanwhile. Stop: long-polls
 * answer, the port closes (in-flight requests get `http.shutdown_grace_ms`), the doorbell and the
 * pool close.
 */
export async function startFront(opts: FrontOptions): Promise<Front> {
  const { config } = opts;
  const pgUrl = config.sync.postgres.url;
  if (!pgUrl) {
    throw new FrontStartError(
      'a central-front serves the sync tables from PostgreSQL: set sync.postgres.url (POSD_SYNC_POSTGRES_URL), e.g. postgresql:///posd?host=/run/postgresql',
    );
  }
  const log = opts.log ?? createLogger(config);
  const clock = opts.clock ?? systemClock;
  const abort = new AbortController();
  const where = maskedPgUrl(pgUrl);
  const pool = createPool({
    connectionString: pgUrl,
    max: config.sync.postgres.pool_max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    application_name: 'posd-central-front',
  });
  // An idle connection cut (PostgreSQL restarted): the pool drops it and opens another when asked.
  pool.on('error', (err) => log.warn({ err: { message: err.message, code: (err as { code?: string }).code } }, 'a PostgreSQL connection of the pool failed'));
  const waiter = new FeedWaiter({ connectionString: pgUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS } as pg.ClientConfig);
  waiter.on('reconnected', () => log.info('the feed LISTEN connection is back; waiting long-polls re-read'));
  let app: ApiApp | undefined;
  let tls: ServerTls | undefined;

  const halt = async (): Promise<boolean> => {
    let clean = true;
    abort.abort();
    tls?.stop();
    if (app && !(await closeHttpApp(app, config.http.shutdown_grace_ms, log))) clean = false;
    try {
      await waiter.stop();
    } catch (err) {
      clean = false;
      log.error({ err }, 'closing the feed LISTEN connection failed');
    }
    try {
      await pool.end();
    } catch (err) {
      clean = false;
      log.error({ err }, 'closing the PostgreSQL pool failed');
    }
    return clean;
  };

  let url: string;
  try {
    try {
      await migrate(pool);
      await waiter.start();
    } catch (err) {
      throw new FrontStartError(`cannot reach PostgreSQL at ${where}: ${(err as Error).message || (err as { code?: string }).code || String(err)}`, {
        cause: err,
      });
    }
    const totals = await syncTotals();
    // TLS as a box has it (tls.*): a manager's files (what fronts behind one address share), or a
    // CA of the front's own in its data folder.
    if (tlsEnabled(config)) tls = await ServerTls.start(config, clock, log);
    app = createHttpApp({ config, log, clock, shutdown: abort.signal }, { notFound: frontNotFound, tls: tls?.material });
    const checks = { registry: totals, skewMs: config.sync.record_time_skew_ms };
    frontRoutes(app, { pool, waiter, totals, checks, clock, log, shutdown: abort.signal });
    await app.listen({ host: config.http.host, port: config.http.port });
    tls?.attach(app.server as never);
    const address = app.server.address();
    url = publicBaseUrl(config, typeof address === 'object' && address ? address.port : config.http.port);
  } catch (err) {
    if (!(err instanceof FrontStartError)) log.error({ err }, 'the central-front failed to start; stopping what had started');
    await halt();
    throw err;
  }
  log.info({ url, role: config.role, postgres: where, pool_max: config.sync.postgres.pool_max, tls: tls ? tls.status : 'off' }, 'posd listening');
  releaseYoungGeneration();

  const stop = stopOnce(log, halt);
  return { app, log, url, stop };
}

/** One line of `posd doctor` (the shape of src/modules/ops/doctor.ts's checks). */
export interface FrontCheck {
  name: string;
  ok: boolean;
  detail: string;
  fix?: string;
}

/**
 * `posd doctor` for a central-front: PostgreSQL reachable, the sync tables there, and the read
 * models published (without keys, every box is refused). Reads only; never creates the tables.
 */
export async function frontDoctor(config: Config): Promise<FrontCheck[]> {
  const pgUrl = config.sync.postgres.url;
  if (!pgUrl) {
    return [
      {
        name: 'postgres',
        ok: false,
        detail: 'sync.postgres.url is not set',
        fix: "set sync.postgres.url (POSD_SYNC_POSTGRES_URL) to the chain's PostgreSQL, e.g. postgresql:///posd?host=/run/postgresql",
      },
    ];
  }
  const where = maskedPgUrl(pgUrl);
  const { createClient, SYNC_TABLES } = await import('./sync/pg/index.js');
  const client = createClient({ connectionString: pgUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, application_name: 'posd-doctor' });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    return [
      {
        name: 'postgres',
        ok: false,
        detail: `cannot reach PostgreSQL at ${where}: ${(err as Error).message || (err as { code?: string }).code}`,
        fix: 'start PostgreSQL (systemctl start postgresql), or correct sync.postgres.url; the front answers 503 sync_database_unavailable until it answers',
      },
    ];
  }
  try {
    const checks: FrontCheck[] = [];
    const v = (await client.query<{ v: string; db: string }>("SELECT current_setting('server_version') AS v, current_database() AS db")).rows[0];
    checks.push({ name: 'postgres', ok: true, detail: `PostgreSQL ${v.v} at ${where} (database ${v.db})` });
    const present = (await client.query<{ t: string }>('SELECT t FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NOT NULL', [[...SYNC_TABLES]])).rows.map(
      (r) => r.t,
    );
    const missing = SYNC_TABLES.filter((t) => !present.includes(t));
    checks.push(
      missing.length
        ? {
            name: 'sync tables',
            ok: false,
            detail: `missing: ${missing.join(', ')}`,
            fix: 'start the core central or a central-front once: each creates the sync tables at start',
          }
        : { name: 'sync tables', ok: true, detail: `${SYNC_TABLES.length} tables present` },
    );
    if (!missing.length) {
      const n = (
        await client.query<{ orgs: number; accounts: number; keys: number; stores: number; behind: number }>(
          `SELECT (SELECT count(*) FROM sync_organizations) AS orgs, (SELECT count(*) FROM sync_accounts) AS accounts,
             (SELECT count(*) FROM sync_keys WHERE revoked_at IS NULL) AS keys, (SELECT count(*) FROM sync_stores) AS stores,
             (SELECT count(*) FROM sync_stores WHERE received_seq > applied_seq) AS behind`,
        )
      ).rows[0];
      checks.push(
        n.keys > 0
          ? {
              name: 'read models',
              ok: true,
              detail: `${n.orgs} organization(s), ${n.accounts} account(s), ${n.keys} key(s) published; ${n.stores} store(s), ${n.behind} with records not applied yet`,
            }
          : {
              name: 'read models',
              ok: false,
              detail: 'no key is published: every store box is refused',
              fix: 'run the core central (role central) with the same sync.postgres.url: it publishes organizations, accounts and key hashes',
            },
      );
    }
    return checks;
  } finally {
    await client.end().catch(() => undefined);
  }
}
