/**
 * The soak issue 30 asked of Node 24 with better-sqlite3 13 before calling the pair done: on Node
 * 24.19+, better-sqlite3 12 aborted the process (`Assertion failed: (env) != nullptr` in
 * `node::RemoveEnvironmentCleanupHook`) when a statement was collected after its environment: a
 * worker thread ending, the process exiting, or a collection mid-run. Here every one of those
 * moments, many times over, then the daemon itself stopped and killed under writes.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { call, freePort, kill9, type PosdProcess, startPosd } from '../terminals/helpers/posd-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let dir: string | undefined;
let posd: PosdProcess | undefined;
afterEach(async () => {
  if (posd) await kill9(posd);
  posd = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

// Workers that open their own connection, prepare statements and write; some terminated mid-write,
// some ending with their statements never finalized; collections forced between rounds; the process
// exits with the main thread's statements alive.
const CHILD = `
const Database = require('better-sqlite3');
const { Worker } = require('node:worker_threads');
const file = process.argv[1];
const WORKER = \`
  const Database = require('better-sqlite3');
  const { workerData, parentPort } = require('node:worker_threads');
  const db = new Database(workerData.file, { timeout: 5000 });
  const insert = db.prepare('INSERT INTO t (worker, n) VALUES (?, ?)');
  const count = db.prepare('SELECT count(*) AS c FROM t WHERE worker = ?');
  const many = db.transaction((k) => { for (let i = 0; i < 20; i++) insert.run(workerData.id, k * 20 + i); });
  for (let k = 0; k < workerData.batches; k++) { many(k); count.get(workerData.id); if (k === 0) parentPort.postMessage('writing'); }
  parentPort.postMessage('done');
\`;
const main = new Database(file);
main.pragma('journal_mode = WAL');
main.exec('CREATE TABLE IF NOT EXISTS t (worker INTEGER, n INTEGER)');
const kept = [];
async function round(r) {
  const workers = [];
  for (let id = 0; id < 4; id++) {
    const w = new Worker(WORKER, { eval: true, workerData: { file, id: r * 4 + id, batches: id % 2 ? 1_000_000 : 5 } });
    workers.push(new Promise((resolve, reject) => {
      w.on('error', reject);
      w.on('exit', resolve);
      // The long writers are terminated mid-write, inside a transaction, statements alive.
      w.on('message', (m) => { if (m === 'writing' && id % 2) setImmediate(() => w.terminate()); });
    }));
  }
  await Promise.all(workers);
  kept.push(main.prepare('SELECT count(*) AS c FROM t WHERE worker >= ?'));
  for (let i = 0; i < 50; i++) main.prepare('SELECT n FROM t WHERE worker = ' + i).get();
  globalThis.gc();
}
(async () => {
  for (let r = 0; r < Number(process.argv[2]); r++) await round(r);
  process.stdout.write(String(kept[kept.length - 1].get(0).c));
  process.exit(0);
})().catch((err) => { console.error(err); process.exit(1); });
`;

describe('better-sqlite3 13 on Node 24', () => {
  it('survives worker threads ending and terminated mid-write, forced collections and an exit with statements alive', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-native-soak-'));
    for (let run = 0; run < 3; run++) {
      const file = join(dir, `soak-${run}.db`);
      const child = spawn(process.execPath, ['--expose-gc', '-e', CHILD, file, '8'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
      expect({ code, signal, err }).toEqual({ code: 0, signal: null, err: '' });
      // The short writers' rows (4 workers x 8 rounds / 2 x 5 batches x 20) at least, all whole.
      expect(Number(out)).toBeGreaterThanOrEqual(16 * 100);
      const db = new Database(file, { readonly: true });
      try {
        expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      } finally {
        db.close();
      }
    }
  }, 120_000);

  it('the daemon stops on SIGTERM and is killed under writes, three times each, with every acknowledged sale kept', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-native-soak-'));
    const env = { POSD_DATA: dir, POSD_HTTP_PORT: String(await freePort()), POSD_LIMITS_PER_KEY_PER_SECOND: '100000' };
    posd = await startPosd(env);
    const key = posd.testKey!;
    expect(key).toMatch(/^sk_test_/);
    const acknowledged: string[] = [];
    for (let round = 0; round < 6; round++) {
      const signal = round % 2 ? 'SIGKILL' : 'SIGTERM';
      let stop = false;
      const writers = Array.from({ length: 8 }, async () => {
        while (!stop) {
          const sale = await call(posd!.url, key, 'POST', '/cash_sales', { amount_in_cents: 100 + round, currency: 'GTQ' }).catch(() => undefined);
          if (sale?.status === 201) acknowledged.push(sale.body.id);
        }
      });
      const before = acknowledged.length;
      while (acknowledged.length < before + 40) await new Promise((r) => setImmediate(r));
      const exited = once(posd.proc, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
      posd.proc.kill(signal);
      const [code, killedBy] = await exited;
      stop = true;
      await Promise.all(writers);
      // SIGTERM: a clean stop (threads ended, statements finalized); SIGKILL: the kernel's doing.
      expect(signal === 'SIGTERM' ? { code, killedBy } : { killedBy }).toEqual(signal === 'SIGTERM' ? { code: 0, killedBy: null } : { killedBy: 'SIGKILL' });
      expect(posd.stderr()).not.toMatch(/Assertion failed|FATAL ERROR|Segmentation/);
      posd = await startPosd(env);
    }
    for (const id of acknowledged) expect((await call(posd.url, key, 'GET', `/intents/${id}`)).status, id).toBe(200);
    expect(acknowledged.length).toBeGreaterThanOrEqual(240);
  }, 180_000);
});
