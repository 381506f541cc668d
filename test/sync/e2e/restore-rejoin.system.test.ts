import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { ChaosProxy } from './chaos-proxy.js';
import { until } from '../helpers.js';
import { killStarted, posd, removeTempDirs, requireBuild, startDaemonProcess, tempDir, type DaemonProcess } from './processes.js';

/**
 * Restoring a store that syncs (issue 16): the store's own older backup put back with `posd
 * restore` used to reuse seqs the central held, and every push answered 409 sync_record_conflict
 * for good. Central and store are `posd serve` processes on real files, the test's proxy between
 * them records every push's answer; the databases are read with read-only SQLite handles.
 */
let central: DaemonProcess;
let store: DaemonProcess | undefined;
let proxy: ChaosProxy;
let centralDb: Database.Database;
let centralDir: string;
let storeDir: string;
let storeKey: string;
let storeId: string;
let centralUrl: string;
let recoveryKeyFile: string;
/** Amounts of every sale the store answered 201 for: each is unique, so a sale is found by its amount. */
const sold: number[] = [];
let nextAmount = 100;

const STORE_CONFIG = {
  role: 'store',
  limits: { per_key_per_second: 100_000 },
  sync: { batch_size: 50, backoff_min_ms: 20, backoff_max_ms: 200, feed_wait_ms: 500, request_timeout_ms: 3000, reconcile_interval_ms: 0 },
};

async function call(method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method,
    headers: { 'x-secret-key': storeKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    headersTimeout: 5000,
    bodyTimeout: 5000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

async function sell(count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const amount = nextAmount++;
    const res = await call('POST', `${store!.url}/api/cash_sales`, { amount_in_cents: amount, currency: 'GTQ' });
    expect(res.status).toBe(201);
    sold.push(amount);
  }
}

/** The store's database, read-only, for one look (the daemon keeps writing it). */
function withStoreDb<T>(fn: (db: Database.Database) => T): T {
  const db = new Database(join(storeDir, 'posd.db'), { readonly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** Every event copied into the outbox and everything acknowledged by the central. */
async function synced(): Promise<void> {
  await until(
    'the store has nothing waiting',
    async () => {
      const s = (await call('GET', `${store!.url}/sync/status`)).body;
      const tailed = withStoreDb(
        (db) => db.prepare("SELECT (SELECT count(*) FROM events) = (SELECT count(*) FROM sync_outbox WHERE kind = 'event') AS ok").get() as { ok: number },
      );
      // The central acknowledges what it received; its projector applies it a moment later.
      const applied = centralDb.prepare('SELECT applied_seq FROM sync_stores WHERE store_id = ?').get(storeId) as { applied_seq: number } | undefined;
      return s.records_waiting === 0 && tailed.ok === 1 && s.acked_seq > 0 && (applied?.applied_seq ?? 0) >= s.acked_seq;
    },
    20_000,
  );
}

async function startStore(): Promise<void> {
  store = await startDaemonProcess(storeDir, STORE_CONFIG);
}

async function stopStore(): Promise<void> {
  await store?.kill('SIGTERM');
  store = undefined;
}

/** No push was ever refused: every answer to `POST /sync/push` the proxy saw was a 200. */
function noPushRefused(): void {
  const statuses = proxy.seen.map((s) => s.status);
  expect(statuses.length).toBeGreaterThan(0);
  expect(statuses.filter((s) => s !== 200)).toEqual([]);
}

/** Central and store agree row for row on what the store's sales wrote, and each sale is there once. */
function agreeRowForRow(): void {
  withStoreDb((storeDb) => {
    // The central holds the store's stream exactly as the store's outbox: each seq once, each id once.
    const outbox = storeDb.prepare('SELECT seq, id FROM sync_outbox ORDER BY seq').all();
    expect(centralDb.prepare('SELECT seq, id FROM sync_received WHERE store_id = ? ORDER BY seq').all(storeId)).toEqual(outbox);
    expect(centralDb.prepare('SELECT applied_seq FROM sync_stores WHERE store_id = ?').get(storeId)).toEqual({
      applied_seq: (outbox.at(-1) as { seq: number }).seq,
    });
    const salesQ =
      'SELECT c.id, c.intent_id, c.checkout_id, c.amount_in_cents, i.status FROM cash_intents c JOIN intents i ON i.id = c.intent_id ORDER BY c.id';
    const storeSales = storeDb.prepare(salesQ).all() as Array<{ amount_in_cents: number }>;
    // Every sale the store answered for, exactly once.
    expect(storeSales.map((s) => s.amount_in_cents).sort((a, b) => a - b)).toEqual([...sold].sort((a, b) => a - b));
    expect(centralDb.prepare(salesQ).all()).toEqual(storeSales);
    const intentsQ = 'SELECT id, type, status, amount_in_cents, currency, checkout_id, created_at FROM intents ORDER BY id';
    expect(centralDb.prepare(intentsQ).all()).toEqual(storeDb.prepare(intentsQ).all());
    // Not created_at: the central writes a pushed cash sale's checkout at the sale's time, which may be a
    // millisecond after the checkout's own at the store (as for any pushed sale, restored or not).
    const checkoutsQ = 'SELECT id, account_id, live_mode, status, amount_in_cents, currency FROM checkouts ORDER BY id';
    expect(centralDb.prepare(checkoutsQ).all()).toEqual(storeDb.prepare(checkoutsQ).all());
    const ledgerQ =
      'SELECT id, type, amount_in_cents, fee_in_cents, net_amount_in_cents, currency, source_id, created_at FROM balance_transactions ORDER BY id';
    expect(centralDb.prepare(ledgerQ).all()).toEqual(storeDb.prepare(ledgerQ).all());
    // The store's events, made before or after the backup, exist at both under their ids.
    const storeEvents = storeDb.prepare('SELECT id, type, account_id, created_at FROM events ORDER BY id').all() as Array<{ id: string }>;
    expect(storeEvents.length).toBeGreaterThanOrEqual(sold.length);
    const ids = storeEvents.map((e) => e.id);
    expect(
      centralDb.prepare(`SELECT id, type, account_id, created_at FROM events WHERE id IN (${ids.map(() => '?').join(',')}) ORDER BY id`).all(...ids),
    ).toEqual(storeEvents);
    const fromStore = centralDb.prepare("SELECT count(*) AS n FROM sync_received WHERE store_id = ? AND kind = 'event'").get(storeId) as { n: number };
    expect(fromStore.n).toBe(storeEvents.length);
  });
}

beforeAll(async () => {
  requireBuild();
  centralDir = tempDir('posd-central-');
  const inst = await posd(['init', '--role', 'central', '--name', 'Chain', '--json', '--data', centralDir]);
  const accountId = (await posd(['accounts', 'create', '--name', 'Store 7', '--organization', inst.organization_id, '--json', '--data', centralDir]))
    .account_id;
  storeKey = (await posd(['keys', 'create', '--account', accountId, '--env', 'live', '--json', '--data', centralDir])).key;
  central = await startDaemonProcess(centralDir, { role: 'central', limits: { per_key_per_second: 100_000 } });
  centralDb = new Database(join(centralDir, 'posd.db'), { readonly: true });
  const u = new URL(central.url);
  proxy = new ChaosProxy({ host: u.hostname, port: Number(u.port) });
  proxy.watch('POST /sync/push');
  const proxyPort = await proxy.listen();
  storeDir = tempDir('posd-store-');
  centralUrl = `http://127.0.0.1:${proxyPort}`;
  const joined = await posd(['init', '--central-url', centralUrl, '--central-key', storeKey, '--json', '--data', storeDir]);
  storeId = joined.store_id;
  // The recovery key a store joined with --central-url is shown, as posd init shows it: written down.
  recoveryKeyFile = join(tempDir('posd-recovery-'), 'recovery.txt');
  writeFileSync(recoveryKeyFile, `${joined.recovery_key}\n`);
  await startStore();
}, 60_000);

afterAll(async () => {
  centralDb?.close();
  await stopStore();
  await central?.kill('SIGTERM');
  await killStarted();
  await proxy?.close();
  removeTempDirs();
});

describe('a synced store restored from its own older backup', () => {
  it('takes back what the backup lacks, continues after the central and pushes without a refusal', async () => {
    await sell(15);
    await synced();
    const backup = join(storeDir, 'before.db');
    await posd(['backup', '--to', backup, '--data', storeDir]);
    // The store keeps selling and syncing after the backup: the central holds sales the backup lacks.
    await sell(20);
    await synced();
    const centralSeq = (centralDb.prepare('SELECT applied_seq FROM sync_stores WHERE store_id = ?').get(storeId) as { applied_seq: number }).applied_seq;
    const centralIds = centralDb.prepare('SELECT id FROM sync_received WHERE store_id = ?').all(storeId) as Array<{ id: string }>;

    await stopStore();
    const out = String(await posd(['restore', backup, '--data', storeDir, '--recovery-key-file', recoveryKeyFile]));
    const lacking = withStoreDb((db) => {
      const have = new Set((db.prepare('SELECT id FROM sync_outbox').all() as Array<{ id: string }>).map((r) => r.id));
      return centralIds.filter((r) => !have.has(r.id)).length;
    });
    expect(lacking).toBeGreaterThanOrEqual(40); // 20 sales and their 20 events at least
    expect(out).toContain(`this store synced with ${centralUrl} (store ${storeId})`);
    expect(out).toMatch(new RegExp(`at next start it will fetch ${lacking} records the backup lacks and continue from sequence ${centralSeq + 1}\\b`));

    await startStore();
    await sell(10);
    await synced();
    noPushRefused();
    agreeRowForRow();
    // The sales made after the backup are the store's own again: its intents hold no origin.
    withStoreDb((db) => expect(db.prepare('SELECT count(*) AS n FROM intents WHERE origin IS NOT NULL').get()).toEqual({ n: 0 }));
  }, 60_000);

  it('keeps selling while its central is unreachable at start, and rejoins without reusing a seq when the link returns', async () => {
    const backup = join(storeDir, 'second.db');
    await posd(['backup', '--to', backup, '--data', storeDir]);
    await sell(12);
    await synced();
    const centralSeq = (centralDb.prepare('SELECT applied_seq FROM sync_stores WHERE store_id = ?').get(storeId) as { applied_seq: number }).applied_seq;
    await stopStore();

    proxy.mode = { up: false, cutResponse: 0, delayMs: 0 };
    proxy.cutAll();
    const out = String(await posd(['restore', backup, '--data', storeDir, '--recovery-key-file', recoveryKeyFile]));
    expect(out).toMatch(/the central could not be asked now .*at next start, before it pushes, the store fetches the records the backup lacks/);
    const pushesBefore = proxy.seen.length;

    // The link is down: the store starts and sells at once, the rejoin waits for the central.
    await startStore();
    await sell(8);
    await until('the events copied into the outbox', () =>
      withStoreDb(
        (db) =>
          (db.prepare("SELECT (SELECT count(*) FROM events) = (SELECT count(*) FROM sync_outbox WHERE kind = 'event') AS ok").get() as { ok: number }).ok === 1,
      ),
    );
    // Made after the restore, before the rejoin: these seqs are ones the central already holds.
    const made = withStoreDb(
      (db) =>
        db
          .prepare("SELECT seq, id FROM sync_outbox WHERE seq > (SELECT CAST(value AS INTEGER) FROM sync_state WHERE key = 'acked_seq') ORDER BY seq")
          .all() as Array<{ seq: number; id: string }>,
    );
    expect(made.length).toBeGreaterThanOrEqual(16);
    expect(made[0].seq).toBeLessThanOrEqual(centralSeq);
    expect(proxy.seen.length).toBe(pushesBefore);

    proxy.mode = { up: true, cutResponse: 0, delayMs: 0 };
    await synced();
    noPushRefused();
    agreeRowForRow();
    // The records made while the central was away were moved past its sequence, in their order.
    const after = withStoreDb((db) => {
      const at = db.prepare('SELECT seq FROM sync_outbox WHERE id = ?').pluck();
      return made.map((m) => at.get(m.id) as number);
    });
    expect(after[0]).toBe(centralSeq + 1);
    expect(after).toEqual([...after].sort((a, b) => a - b));
  }, 60_000);
});
