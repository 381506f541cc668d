import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { request } from 'undici';
import { validateConfig } from '../../src/config.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { openDatabase } from '../../src/db/database.js';
import { databaseFile } from '../../src/db/paths.js';
import { AccountsService } from '../../src/accounts/service.js';
import { CentralClient } from '../../src/sync/store/transport.js';
import { joinCentral } from '../../src/sync/store/join.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { systemClock, type Clock } from '../../src/clock.js';
import type { PosdModule } from '../../src/api/module.js';
import { projected } from '../../src/sync/central/projector.js';
import { syncStatus } from '../../src/sync/status.js';
import { storeSide } from '../../src/sync/store/sync-store.js';
import { STATE } from '../../src/sync/shared/state.js';
import { until } from '../helpers/until.js';

/** A central; `modules` (default: every module) lets a test declare kinds of its own. */
export async function startCentral(opts: { clock?: Clock; modules?: readonly PosdModule[]; config?: Record<string, unknown> } = {}): Promise<TestServer> {
  const central = await startTestServer({ config: { ...opts.config, role: 'central' }, clock: opts.clock, modules: opts.modules });
  centrals.add(central);
  const stop = central.stop.bind(central);
  central.stop = async () => {
    centrals.delete(central);
    await stop();
  };
  return central;
}

/**
 * A central that takes records dated long before its accounts were made (`sync.record_time_skew_ms`
 * of two years): for tests whose store box sells on a fixed business clock in the past. A real box
 * joins after its account exists, so its records never are.
 */
export const BACKDATED = { sync: { record_time_skew_ms: 2 * 365 * 86_400_000 } };

/** The in-process centrals running now: `appliedAtCentral` waits for their projectors. */
const centrals = new Set<TestServer>();

/**
 * The store has nothing waiting (the central received every record), and the central's projector
 * applied what it received: what "synced" meant when a push was applied before it was answered.
 */
export async function appliedAtCentral(store: Pick<TestStore, 'daemon'>, timeoutMs = 10_000): Promise<void> {
  const { db, config } = store.daemon.ctx;
  // An event is waiting too before the push loop copies it into the outbox (its tail): "nothing
  // waiting" counts only the outbox, so the last event of a sale could still be on its way.
  const untailed = () => storeSide(db).eventsAfter(Number(storeSide(db).state(STATE.eventsCursor) ?? 0), 1).length;
  await until('received by the central', () => untailed() === 0 && syncStatus(config, db).records_waiting === 0, timeoutMs);
  for (const c of centrals) await projected(c.daemon.ctx);
}

/** What central operations do for a new store: an account in their organization and its live key. */
export function addStoreAccount(central: TestServer, name = 'Store 1'): { accountId: string; sandboxId: string; key: string; testKey: string } {
  const accounts = new AccountsService(central.daemon.ctx.db, central.daemon.ctx.clock);
  const { account, sandbox } = accounts.createAccount({ name, organizationId: central.installation.organization_id });
  const key = accounts.createKey({ accountId: account.id, environment: 'live' }).key;
  const testKey = accounts.createKey({ accountId: sandbox.id, environment: 'test' }).key;
  return { accountId: account.id, sandboxId: sandbox.id, key, testKey };
}

export interface TestStore {
  daemon: Daemon;
  url: string;
  dataDir: string;
  storeId: string;
  stop(): Promise<void>;
  restart(): Promise<TestStore>;
}

/** A store box joined to the central (as `posd init --central-url` does), then started with its worker. */
export async function startStore(
  centralUrl: string,
  key: string,
  opts: { sync?: Record<string, unknown>; dataDir?: string; clock?: Clock; config?: Record<string, unknown>; log?: pino.Logger } = {},
): Promise<TestStore> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'posd-store-'));
  const config = validateConfig({
    ...opts.config,
    data_dir: dataDir,
    role: 'store',
    http: { port: 0, host: '127.0.0.1' },
    log: { level: 'silent' },
    sync: { backoff_min_ms: 20, backoff_max_ms: 200, feed_wait_ms: 300, reconcile_interval_ms: 0, ...(opts.sync ?? {}) },
  });
  let storeId = '';
  if (!opts.dataDir) {
    const client = new CentralClient(centralUrl, key, { timeoutMs: 5000 });
    const snap = await client.bootstrap();
    await client.close();
    const db = openDatabase(databaseFile(config));
    storeId = joinCentral(db, systemClock, snap, { url: centralUrl, key }).store_id;
    db.close();
  }
  const daemon = await startDaemon({ config, clock: opts.clock, log: opts.log ?? pino({ level: process.env.POSD_TEST_LOG ?? 'silent' }) });
  if (!storeId) storeId = (daemon.ctx.db.prepare("SELECT value FROM sync_state WHERE key = 'store_id'").get() as { value: string }).value;
  const self: TestStore = {
    daemon,
    url: daemon.url,
    dataDir,
    storeId,
    async stop() {
      await daemon.stop();
    },
    async restart() {
      await daemon.stop();
      return startStore(centralUrl, key, { ...opts, dataDir });
    },
  };
  return self;
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export async function http<T = any>(method: 'GET' | 'POST' | 'PATCH', url: string, key: string | null, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await request(url, {
    method,
    headers: { ...(key ? { 'x-secret-key': key } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

/**
 * `POST /sync/push` to an in-process central, then waits for its projector to apply what was
 * received, and fills the answer's outcome fields (which a central answering on receipt leaves
 * empty) from what the projector decided for these records: as the push answered before.
 */
export async function pushAndProject(
  central: TestServer,
  key: string,
  body: { store_id: string; records: Array<{ id: string; [k: string]: unknown }> },
): Promise<{ status: number; body: any }> {
  const res = await http('POST', `${central.url}/sync/push`, key, { protocol: 1, ...body });
  if (res.status !== 200) return res;
  await projected(central.daemon.ctx);
  const rows = body.records.map(
    (r) =>
      central.daemon.ctx.db.prepare('SELECT id, outcome, reason FROM sync_received WHERE id = ?').get(r.id) as {
        id: string;
        outcome: string;
        reason: string | null;
      },
  );
  return {
    status: res.status,
    body: {
      ...res.body,
      held: rows.filter((r) => r.outcome === 'held').length,
      parked: rows.filter((r) => r.outcome === 'parked').length,
      rejected: rows.filter((r) => r.outcome === 'rejected').map((r) => ({ id: r.id, reason: r.reason })),
    },
  };
}

/** The one `until` (test/helpers/until.ts), here too because every sync test imports its helpers from here. */
export { until };

/** A central, a store account there and a store box joined with its live key; stopped by `cleanup`. */
export async function pairStoreAndCentral(
  cleanup: Array<() => Promise<void> | void>,
): Promise<{ central: TestServer; store: TestStore; acct: ReturnType<typeof addStoreAccount> }> {
  const central = await startCentral();
  cleanup.push(() => central.stop());
  const acct = addStoreAccount(central);
  const store = await startStore(central.url, acct.key);
  cleanup.push(() => removeDir(store.dataDir));
  cleanup.push(() => store.stop());
  return { central, store, acct };
}
