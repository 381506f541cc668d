import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { MAIN, type BenchResult } from './lib.js';
import { validateConfig } from '../src/config.js';
import { createContext } from '../src/daemon.js';
import { tx } from '../src/db/database.js';
import { accountsOf } from '../src/accounts/service.js';
import { applyPush, syncScope } from '../src/sync/central/service.js';
import { centralSide } from '../src/sync/central/sync-store.js';
import type { PushBody } from '../src/sync/shared/wire.js';

const run$ = promisify(execFile);
const posd = async (args: string[]) => JSON.parse((await run$(process.execPath, [MAIN, ...args, '--json'])).stdout);

/** A central made by the CLI, opened in this process: pushes are applied by calling the engine. */
async function central(history: number) {
  const dir = mkdtempSync(join(tmpdir(), 'posd-bench-history-'));
  const inst = await posd(['init', '--role', 'central', '--data', dir]);
  const acct = await posd(['accounts', 'create', '--name', 'Store', '--organization', inst.organization_id, '--data', dir]);
  const ctx = createContext(validateConfig({ data_dir: dir, role: 'central' }), { log: pino({ level: 'silent' }) });
  const keyAccount = accountsOf(ctx).account(acct.account_id)!;
  const scope = syncScope(accountsOf(ctx), keyAccount);
  if (history > 0) {
    // A store's history written set-based, as a year of its pushes would have left it.
    tx(ctx.db, () => {
      centralSide(ctx.db).ensureStore('store_bench', keyAccount.id, true, '2025-01-01T00:00:00.000Z');
      ctx.db
        .prepare(
          `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
           INSERT INTO sync_received (id, store_id, seq, account_id, live_mode, kind, hash, payload, created_at, received_at, outcome)
           SELECT 'sync_hist' || i, 'store_bench', i, ?, 1, CASE WHEN i % 2 THEN 'cash_sale' ELSE 'event' END, 'hash' || i,
             '{"id":"msg_hist' || i || '","pad":"' || printf('%.900c', 'x') || '"}',
             strftime('%Y-%m-%dT%H:%M:%fZ', 1735689600 + i * 86, 'unixepoch'), strftime('%Y-%m-%dT%H:%M:%fZ', 1735689600 + i * 86, 'unixepoch'),
             CASE WHEN i % 1000 = 0 THEN 'rejected' ELSE 'applied' END
           FROM n`,
        )
        .run(history, keyAccount.id);
      ctx.db.prepare("UPDATE sync_stores SET applied_seq = ? WHERE store_id = 'store_bench'").run(history);
    });
  }
  let seq = history;
  let n = 0;
  return {
    /** One small push (4 events, as a box sends a sale or two), timed. */
    async push(): Promise<number> {
      const records: PushBody['records'] = Array.from({ length: 4 }, () => {
        seq++;
        const id = `msg_bench${history}_${++n}`;
        return {
          seq,
          prev_seq: seq - 1,
          id: `sync_${id}`,
          kind: 'event',
          account_id: keyAccount.id,
          live_mode: true,
          payload: { id, type: 'intent.succeeded', payload: { id: `pi_${n}` }, created_at: '2026-03-02T10:00:00.000Z' },
          created_at: '2026-03-02T10:00:00.000Z',
        };
      });
      const t0 = performance.now();
      const res = await applyPush(ctx, keyAccount, scope, { protocol: 1, store_id: 'store_bench', records });
      if (res.applied !== 4) throw new Error(`push applied ${res.applied} of 4`);
      return performance.now() - t0;
    },
    close() {
      ctx.db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * A store's small push at a central that holds HISTORY records of that store's history, beside
 * the same push at an empty central (the baseline), pushes interleaved so a loaded box weighs on
 * both alike. Before the partial held index (issue 19) the first cost 165 ms at 200,000 records
 * and the second 1.1 ms: the push read the store's whole history.
 */
export async function run(): Promise<BenchResult[]> {
  const HISTORY = Number(process.env.POSD_BENCH_CENTRAL_HISTORY ?? 200_000);
  const ROUNDS = 60;
  const old = await central(HISTORY);
  const fresh = await central(0);
  try {
    const times = { old: [] as number[], fresh: [] as number[] };
    for (let i = 0; i < ROUNDS + 10; i++) {
      const a = await old.push();
      const b = await fresh.push();
      if (i >= 10) {
        times.old.push(a);
        times.fresh.push(b);
      }
    }
    const withHistory = median(times.old);
    const emptyCentral = median(times.fresh);
    return [
      {
        scenario: `central: one push of 4 records with ${HISTORY} records of the store's history, median of ${ROUNDS} (in process)`,
        metrics: { 'ms per push': withHistory },
        baseline: { 'ms per push at an empty central': emptyCentral },
        ratio: emptyCentral / withHistory,
        target: 'ratio ≥ 0.5 (cost flat in history)',
      },
    ];
  } finally {
    old.close();
    fresh.close();
  }
}
