import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { ChaosProxy } from './chaos-proxy.js';
import { until } from '../helpers.js';
import { killStarted, posd, removeTempDirs, requireBuild, startDaemonProcess, tempDir, type DaemonProcess } from './processes.js';
import { inspectDatabase } from '../../../src/system/backup.js';

/**
 * Issue 37: "SIGKILL during a push being received at the central". A store sells without pause, its
 * pushes flowing through the test's proxy; the central is SIGKILLed while they flow, its database
 * checked as the kill left it, then started again on it. Nothing the central acknowledged is lost,
 * and every sale the store answered for reaches it once.
 */
let central: DaemonProcess | undefined;
let store: DaemonProcess | undefined;
let proxy: ChaosProxy;
let centralDir: string;
let storeDir: string;
let storeKey: string;
const CENTRAL_CONFIG = { role: 'central', limits: { per_key_per_second: 100_000 } };
const STORE_CONFIG = {
  role: 'store',
  limits: { per_key_per_second: 100_000 },
  sync: { batch_size: 20, backoff_min_ms: 20, backoff_max_ms: 200, feed_wait_ms: 500, request_timeout_ms: 3000, reconcile_interval_ms: 0 },
};

function peek<T>(dir: string, fn: (db: Database.Database) => T): T {
  const db = new Database(join(dir, 'posd.db'), { readonly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

const hostPort = (url: string) => ({ host: new URL(url).hostname, port: Number(new URL(url).port) });

beforeAll(async () => {
  requireBuild();
  centralDir = tempDir('posd-central-cut-');
  const inst = await posd(['init', '--role', 'central', '--name', 'Chain', '--json', '--data', centralDir]);
  const accountId = (await posd(['accounts', 'create', '--name', 'Store 9', '--organization', inst.organization_id, '--json', '--data', centralDir]))
    .account_id;
  storeKey = (await posd(['keys', 'create', '--account', accountId, '--env', 'live', '--json', '--data', centralDir])).key;
  central = await startDaemonProcess(centralDir, CENTRAL_CONFIG);
  proxy = new ChaosProxy(hostPort(central.url));
  proxy.watch('POST /sync/push');
  const port = await proxy.listen();
  storeDir = tempDir('posd-store-cut-');
  await posd(['init', '--central-url', `http://127.0.0.1:${port}`, '--central-key', storeKey, '--json', '--data', storeDir]);
  store = await startDaemonProcess(storeDir, STORE_CONFIG);
}, 120_000);

afterAll(async () => {
  await killStarted();
  await proxy?.close();
  removeTempDirs();
});

describe('a power cut at the central', () => {
  it('while pushes are received: its database is whole, nothing it acknowledged is lost, and every sale arrives once after it restarts', async () => {
    const sold: number[] = [];
    let selling = true;
    let amount = 100;
    const sell = async () => {
      while (selling) {
        const a = amount++;
        const res = await request(`${store!.url}/api/cash_sales`, {
          method: 'POST',
          headers: { 'x-secret-key': storeKey, 'content-type': 'application/json' },
          body: JSON.stringify({ amount_in_cents: a, currency: 'GTQ' }),
        });
        await res.body.text();
        if (res.statusCode === 201) sold.push(a);
      }
    };
    const sellers = [sell(), sell()];
    // Pushes are flowing: several answered already, more on their way.
    await until('pushes flowing to the central', () => proxy.seen.filter((s) => s.status === 200).length >= 3, 60_000);
    await central!.kill('SIGKILL');
    central = undefined;
    // What the store holds as acknowledged cannot move while the central is down.
    const acked = peek(storeDir, (db) => Number((db.prepare("SELECT value FROM sync_state WHERE key = 'acked_seq'").get() as { value: string }).value));
    expect(acked).toBeGreaterThan(0);
    expect(inspectDatabase(join(centralDir, 'posd.db'))).toMatchObject({ ok: true });
    // Acknowledged means durably received (sync_received); applying them follows, after the restart too.
    const received = peek(centralDir, (db) => db.prepare('SELECT count(DISTINCT seq) FROM sync_received WHERE seq <= ?').pluck().get(acked) as number);
    expect(received).toBe(acked);

    // Started again on the same files; the store sells on meanwhile and catches up.
    central = await startDaemonProcess(centralDir, CENTRAL_CONFIG);
    proxy.target = hostPort(central.url);
    selling = false;
    await Promise.all(sellers);
    await until(
      'every sale at the central',
      () => peek(centralDir, (db) => db.prepare('SELECT count(*) FROM cash_intents').pluck().get() as number) === sold.length,
      120_000,
    );
    const amounts = peek(centralDir, (db) => db.prepare('SELECT amount_in_cents FROM cash_intents ORDER BY amount_in_cents').pluck().all() as number[]);
    expect(amounts).toEqual([...sold].sort((a, b) => a - b));
    expect(peek(centralDir, (db) => db.prepare('SELECT count(*) - count(DISTINCT seq) FROM sync_received').pluck().get())).toBe(0);
  }, 300_000);
});
