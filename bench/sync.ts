import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import pino from 'pino';
import { MAIN, type BenchResult } from './lib.js';
import { validateConfig } from '../src/config.js';
import { createContext } from '../src/daemon.js';
import { AccountsService } from '../src/accounts/service.js';
import { createCashSale } from '../src/modules/cash-sales/service.js';
import { pushAll } from '../src/sync/client.js';
import { tailEvents, waitingCount } from '../src/sync/push.js';
import { CentralClient } from '../src/sync/transport.js';
import { centralTarget, STATE } from '../src/sync/status.js';
import { syncStore } from '../src/sync/store.js';

const run$ = promisify(execFile);
const posd = async (args: string[]) => JSON.parse((await run$(process.execPath, [MAIN, ...args, '--json'])).stdout);

/**
 * A store offline for a long while: SALES cash sales recorded with no link (each: its cash_sale
 * record and its `intent.succeeded` event, so twice as many sync records), then the link restored and
 * everything pushed to a central running in its own process, batch by batch, as `posd sync now`
 * does. Measured: records applied at the central (its database at `synchronous`, FULL by default) per
 * second and the time to drain. Baseline: raw
 * better-sqlite3 inserting the same number of rows of the same size in transactions of one batch,
 * with the same `synchronous` setting.
 */
export async function run(): Promise<BenchResult[]> {
  const SALES = Number(process.env.POSD_BENCH_SYNC_SALES ?? 100_000);
  const synchronous = (process.env.POSD_DATABASE_SYNCHRONOUS ?? 'FULL') as 'FULL' | 'NORMAL';
  const centralDir = mkdtempSync(join(tmpdir(), 'posd-bench-central-'));
  const storeDir = mkdtempSync(join(tmpdir(), 'posd-bench-store-'));
  const inst = await posd(['init', '--role', 'central', '--data', centralDir]);
  const acct = await posd(['accounts', 'create', '--name', 'Store', '--organization', inst.organization_id, '--data', centralDir]);
  const key = (await posd(['keys', 'create', '--account', acct.account_id, '--env', 'live', '--data', centralDir])).key;
  const central = spawn(process.execPath, [...(process.env.POSD_BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.POSD_BENCH_PROF] : []), MAIN, 'serve', '--data', centralDir, '--port', '0'], {
    env: { ...process.env, POSD_ROLE: 'central', POSD_LOG_LEVEL: 'info', POSD_LOG_FORMAT: 'json', POSD_DATABASE_SYNCHRONOUS: synchronous, POSD_HTTP_BODY_LIMIT_BYTES: String(16 * 1024 * 1024) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const centralUrl = await new Promise<string>((resolve, reject) => {
    let text = '';
    central.stdout!.on('data', (d) => {
      text += d;
      const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)\/api"/.exec(text);
      if (m) resolve(m[1]);
    });
    central.once('exit', (code) => reject(new Error(`central exited ${code}`)));
  });
  try {
    await posd(['init', '--central-url', centralUrl, '--central-key', key, '--data', storeDir]);
    // Recording the backlog is not what is measured: the store side commits with NORMAL to build it quickly.
    const config = validateConfig({ data_dir: storeDir, role: 'store', database: { synchronous: 'NORMAL' }, sync: { batch_size: 1000, batch_max_bytes: 8 * 1024 * 1024 } });
    const ctx = createContext(config, { log: pino({ level: 'silent' }) });
    try {
      // Offline: nothing is pushed while the sales are made.
      const account = new AccountsService(ctx.db, ctx.clock).account(acct.account_id)!;
      for (let i = 0; i < SALES; i++) await createCashSale(ctx, account, { amount_in_cents: 100 + (i % 5000), currency: 'GTQ' } as never);
      tailEvents(ctx.db, SALES * 4);
      const records = waitingCount(ctx.db);
      const target = centralTarget(config, ctx.db)!;
      const client = new CentralClient(target.url, target.key, { timeoutMs: 120_000 });
      const t0 = performance.now();
      await pushAll(ctx, client, syncStore(ctx.db).state(STATE.storeId)!);
      const seconds = (performance.now() - t0) / 1000;
      await client.close();
      if (waitingCount(ctx.db) !== 0) throw new Error('records still waiting after the push');
      const rawRate = rawBaseline(records, 1000, synchronous);
      const rate = records / seconds;
      return [
        {
          scenario: `sync: ${SALES} sales recorded offline (${records} records) pushed when the link returns, batches of 1000, synchronous=${synchronous}`,
          metrics: { 'records/s applied': rate, 'sales/s': SALES / seconds, 'drain s': seconds },
          baseline: { 'rows/s raw batch insert': rawRate },
          ratio: rate / rawRate,
          target: `${SALES} sales drained in < 60 s`,
        },
      ];
    } finally {
      ctx.db.close();
    }
  } finally {
    central.kill('SIGTERM');
    await new Promise((r) => central.once('exit', r));
    rmSync(centralDir, { recursive: true, force: true });
    rmSync(storeDir, { recursive: true, force: true });
  }
}

/** Raw better-sqlite3: `n` rows carrying a record-sized JSON payload, `batch` rows per transaction. */
function rawBaseline(n: number, batch: number, synchronous: string): number {
  const dir = mkdtempSync(join(tmpdir(), 'posd-bench-raw-'));
  const db = new Database(join(dir, 'raw.db'));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.exec('CREATE TABLE r (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, payload TEXT NOT NULL) STRICT');
  const insert = db.prepare('INSERT INTO r (id, seq, payload) VALUES (?, ?, ?)');
  const payload = JSON.stringify({ sale: { id: 'in_0000000000000000', amount_in_cents: 2500, currency: 'GTQ', checkout: { id: 'ch_0000000000000000' } }, pad: 'x'.repeat(900) });
  const t0 = performance.now();
  for (let i = 0; i < n; i += batch) {
    db.transaction(() => {
      for (let j = i; j < Math.min(n, i + batch); j++) insert.run(`sync_${j.toString(36).padStart(16, '0')}`, j, payload);
    })();
  }
  const rate = n / ((performance.now() - t0) / 1000);
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return rate;
}
