import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchResult } from './lib.js';
import { backupDatabase } from '../src/system/backup.js';

const MiB = 1 << 20;

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/**
 * `posd backup`'s copy (online backup API from a held snapshot, integrity_check, fsync, rename)
 * against the raw limit: copying the same quiescent file with copyFileSync. Target: within 4x of a
 * plain copy (the integrity check reads every page once more).
 */
export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'posd-bench-backup-'));
  try {
    const file = join(dir, 'source.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE accounts (id TEXT PRIMARY KEY); INSERT INTO accounts VALUES (\'ac_bench\');');
    db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, account_id TEXT, payload TEXT)');
    const ins = db.prepare('INSERT INTO rows (account_id, payload) VALUES (?, ?)');
    db.transaction(() => {
      for (let i = 0; i < 300_000; i++) ins.run('ac_bench', `sale-${i}-${'x'.repeat(150)}`);
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const bytes = statSync(file).size;

    const ours: number[] = [];
    const raw: number[] = [];
    for (let i = 0; i < 3; i++) {
      let t = process.hrtime.bigint();
      await backupDatabase(file, join(dir, `b${i}.db`));
      ours.push(Number(process.hrtime.bigint() - t) / 1e9);
      t = process.hrtime.bigint();
      copyFileSync(file, join(dir, `c${i}.db`));
      raw.push(Number(process.hrtime.bigint() - t) / 1e9);
    }
    const oursMiBs = bytes / MiB / median(ours);
    const rawMiBs = bytes / MiB / median(raw);
    return [
      {
        scenario: `backup of a ${(bytes / MiB).toFixed(0)} MiB database (snapshot copy + integrity_check + fsync)`,
        metrics: { mib_per_s: oursMiBs, seconds: median(ours) },
        baseline: { mib_per_s: rawMiBs, seconds: median(raw) },
        ratio: oursMiBs / rawMiBs,
        target: '>= 0.25 of a plain file copy',
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
