import { statSync } from 'node:fs';
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { databaseFile } from '../db/paths.js';
import { latestVersion } from '../db/migrate.js';
import { posdVersion } from './build-info.js';

/**
 * The metrics of one daemon. Each daemon has its own prom-client Registry (never the global one), so
 * two daemons in one process (tests) never share or double-register series. Modules register their
 * own series through `counter`/`gauge`/`histogram`, which return the existing series when a name is
 * registered twice (a module set up again on the same context gets the same counter).
 */
export interface Metrics {
  readonly registry: Registry;
  counter<T extends string>(cfg: Omit<CounterConfiguration<T>, 'registers'>): Counter<T>;
  gauge<T extends string>(cfg: Omit<GaugeConfiguration<T>, 'registers'>): Gauge<T>;
  histogram<T extends string>(cfg: Omit<HistogramConfiguration<T>, 'registers'>): Histogram<T>;
}

const byContext = new WeakMap<object, Metrics>();

function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function create(ctx: Pick<AppContext, 'config'>): Metrics {
  const registry = new Registry();
  const existing = (name: string) => registry.getSingleMetric(name);
  const m: Metrics = {
    registry,
    counter: (cfg) => (existing(cfg.name) as Counter<never>) ?? new Counter({ ...cfg, registers: [registry] }),
    gauge: (cfg) => (existing(cfg.name) as Gauge<never>) ?? new Gauge({ ...cfg, registers: [registry] }),
    histogram: (cfg) => (existing(cfg.name) as Histogram<never>) ?? new Histogram({ ...cfg, registers: [registry] }),
  };
  // Process defaults (CPU, memory, event loop lag, handles, GC) under their usual names, and one
  // build-info series so a dashboard can tell which posd answers.
  collectDefaultMetrics({ register: registry });
  m.gauge({
    name: 'posd_build_info',
    help: 'The running posd: version, Node.js version, schema version and role (always 1)',
    labelNames: ['version', 'node', 'schema', 'role'],
  }).set({ version: posdVersion(), node: process.versions.node, schema: String(latestVersion()), role: ctx.config.role }, 1);
  const db = databaseFile(ctx.config);
  m.gauge({
    name: 'posd_database_bytes',
    help: 'Size of the SQLite database on disk, by file (main, wal)',
    labelNames: ['file'],
    collect() {
      this.set({ file: 'main' }, fileSize(db));
      this.set({ file: 'wal' }, fileSize(`${db}-wal`));
    },
  });
  return m;
}

/** The metrics of the daemon that owns `ctx`; made on first use. */
export function metrics(ctx: Pick<AppContext, 'config'>): Metrics {
  let m = byContext.get(ctx);
  if (!m) {
    m = create(ctx);
    byContext.set(ctx, m);
  }
  return m;
}

/**
 * Counts every answered request by method, route pattern and status. The route pattern
 * (`/api/checkouts/:id`), never the raw URL, keeps the label set bounded; requests that matched no
 * route count under `unmatched`.
 */
export function registerHttpMetrics(app: FastifyInstance, ctx: Pick<AppContext, 'config'>): void {
  const m = metrics(ctx);
  const requests = m.counter({
    name: 'posd_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code',
    labelNames: ['method', 'route', 'status'],
  });
  const duration = m.histogram({
    name: 'posd_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method and route pattern',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const method = req.method;
    requests.inc({ method, route, status: String(reply.statusCode) });
    duration.observe({ method, route }, reply.elapsedTime / 1000);
  });
}
