import Database from 'better-sqlite3';
import { closeSync, copyFileSync, fsyncSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchResult } from './lib.js';
import { backupDatabase } from '../src/system/backup.js';

const MiB = 1 << 20;
/** Each side runs this many times, interleaved; medians (the machine is shared). */
const RUNS = 5;

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** One table, no index. */
function oneTable(db: Database.Database): void {
  db.exec("CREATE TABLE accounts (id TEXT PRIMARY KEY); INSERT INTO accounts VALUES ('ac_bench');");
  db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, account_id TEXT, payload TEXT)');
  const ins = db.prepare('INSERT INTO rows (account_id, payload) VALUES (?, ?)');
  db.transaction(() => {
    for (let i = 0; i < 300_000; i++) ins.run('ac_bench', `sale-${i}-${'x'.repeat(150)}`);
  })();
}

/**
 * Shaped like a store's file: sales, events, ledger, idempotency keys and customers, each with the
 * indexes such tables have, where the full `PRAGMA integrity_check` looks every row up in every index
 * (about 3.5 times `quick_check` here, and more than 10 plain copies; the backup runs `quick_check`).
 */
function storeShaped(db: Database.Database): void {
  db.exec(`
    CREATE TABLE accounts (id TEXT PRIMARY KEY); INSERT INTO accounts VALUES ('ac_bench');
    CREATE TABLE sales (id TEXT PRIMARY KEY, account_id TEXT NOT NULL, amount INTEGER NOT NULL, created INTEGER NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('ok', 'refunded')), meta TEXT);
    CREATE INDEX sales_account_created ON sales (account_id, created);
    CREATE TABLE events (id INTEGER PRIMARY KEY, account_id TEXT NOT NULL, type TEXT NOT NULL, created INTEGER NOT NULL, data TEXT NOT NULL);
    CREATE INDEX events_account ON events (account_id, created);
    CREATE TABLE ledger (id INTEGER PRIMARY KEY, account_id TEXT NOT NULL, source_id TEXT NOT NULL, amount INTEGER NOT NULL, created INTEGER NOT NULL);
    CREATE INDEX ledger_source ON ledger (source_id);
    CREATE INDEX ledger_account ON ledger (account_id, created);
    CREATE TABLE idempotency (key TEXT PRIMARY KEY, account_id TEXT NOT NULL, response TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE customers (id TEXT PRIMARY KEY, email TEXT, name TEXT);
    CREATE INDEX customers_email ON customers (email);
  `);
  const sale = db.prepare('INSERT INTO sales VALUES (?, ?, ?, ?, ?, ?)');
  const event = db.prepare('INSERT INTO events (account_id, type, created, data) VALUES (?, ?, ?, ?)');
  const entry = db.prepare('INSERT INTO ledger (account_id, source_id, amount, created) VALUES (?, ?, ?, ?)');
  const key = db.prepare('INSERT INTO idempotency VALUES (?, ?, ?)');
  const customer = db.prepare('INSERT INTO customers VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < 100_000; i++) {
      const id = `cs_${i.toString(36).padStart(12, '0')}`;
      sale.run(id, 'ac_bench', 100 + i, 1.7e9 + i, 'ok', `{"note":"${'m'.repeat(40)}"}`);
      event.run('ac_bench', 'cash_sale.created', 1.7e9 + i, JSON.stringify({ id, amount: 100 + i, pad: 'p'.repeat(120) }));
      entry.run('ac_bench', id, 100 + i, 1.7e9 + i);
      key.run(`idem_${i}_${'k'.repeat(20)}`, 'ac_bench', JSON.stringify({ id, status: 200 }));
      if (i % 10 === 0) customer.run(`cus_${i}`, `c${i}@example.test`, `Customer ${i}`);
    }
  })();
}

/** CPU seconds of running `statements` on a read-only connection of this thread. */
function cpuOf(file: string, statements: string[]): number {
  const db = new Database(file, { readonly: true });
  try {
    db.pragma(`mmap_size = ${statSync(file).size}`);
    const cpu = process.cpuUsage();
    for (const statement of statements) db.pragma(statement);
    return cpuSeconds(cpu);
  } finally {
    db.close();
  }
}

function cpuSeconds(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1e6;
}

/**
 * `posd backup`'s copy (database and WAL copied by the kernel under a held read snapshot, WAL folded
 * in, `quick_check`, fsync, rename) against the raw limit: copying the same quiescent file with
 * copyFileSync, no flush. Target: 0.25 of a plain copy. The seconds are wall time; cpu_s is the
 * process's CPU time, all threads (on a shared box a run's wall time is mostly its wait for a core).
 * The `*_ms` metrics are the backup's phases (BackupResult.phases), wall time, medians; the check and
 * the flush run side by side, each counted from the end of the bundle phase. Beside the baseline,
 * the same copy followed by its fsync (`flushed_copy_s`) and the ratio that alone leaves
 * (`ceiling`): a backup that is on disk when it says so cannot beat it, whatever its check costs.
 */
async function measure(name: string, fill: (db: Database.Database) => void, walRows = 0): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'posd-bench-backup-'));
  let writer: Database.Database | undefined;
  try {
    const file = join(dir, 'source.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    fill(db);
    db.pragma('wal_checkpoint(TRUNCATE)');
    if (walRows > 0) {
      // Commits left in the WAL, as in a running daemon's: the backup copies and folds them in. The
      // connection stays open (closing it would checkpoint them).
      db.pragma('wal_autocheckpoint = 0');
      const ins = db.prepare('INSERT INTO rows (account_id, payload) VALUES (?, ?)');
      db.transaction(() => {
        for (let i = 0; i < walRows; i++) ins.run('ac_bench', `wal-${i}-${'w'.repeat(150)}`);
      })();
      writer = db;
    } else db.close();
    const bytes = statSync(file).size; // the database file, as the baseline copies it
    // What the full check would cost (posd doctor and posd restore run it), and the backup's own.
    const fullCpu = median(Array.from({ length: 3 }, () => cpuOf(file, ['integrity_check'])));
    const quickCpu = median(Array.from({ length: 3 }, () => cpuOf(file, ['quick_check'])));

    const ours = { wall: [] as number[], cpu: [] as number[], phases: [] as Array<Record<string, number>> };
    const raw = { wall: [] as number[], cpu: [] as number[] };
    const flushed: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      {
        const cpu = process.cpuUsage();
        const start = process.hrtime.bigint();
        const result = await backupDatabase(file, join(dir, `b${i}.db`));
        ours.wall.push(Number(process.hrtime.bigint() - start) / 1e9);
        ours.cpu.push(cpuSeconds(cpu));
        ours.phases.push(result.phases);
        rmSync(join(dir, `b${i}.db`));
      }
      const cpu = process.cpuUsage();
      const start = process.hrtime.bigint();
      copyFileSync(file, join(dir, `c${i}.db`));
      raw.wall.push(Number(process.hrtime.bigint() - start) / 1e9);
      raw.cpu.push(cpuSeconds(cpu));
      rmSync(join(dir, `c${i}.db`));
      // The floor under any backup that is on disk when it says so: the same copy, then its fsync.
      const flushStart = process.hrtime.bigint();
      copyFileSync(file, join(dir, `f${i}.db`));
      const fd = openSync(join(dir, `f${i}.db`), 'r');
      fsyncSync(fd);
      closeSync(fd);
      flushed.push(Number(process.hrtime.bigint() - flushStart) / 1e9);
      rmSync(join(dir, `f${i}.db`));
    }
    const rawMiBs = bytes / MiB / median(raw.wall);
    const oursMiBs = bytes / MiB / median(ours.wall);
    return {
      scenario: `backup of a ${(bytes / MiB).toFixed(0)} MiB database, ${name} (snapshot copy + quick_check + fsync)`,
      metrics: {
        mib_per_s: oursMiBs,
        seconds: median(ours.wall),
        cpu_s: median(ours.cpu),
        quick_check_cpu_s: quickCpu,
        integrity_check_cpu_s: fullCpu,
        ...Object.fromEntries(Object.keys(ours.phases[0]).map((p) => [`${p}_ms`, median(ours.phases.map((x) => x[p]))])),
      },
      // flushed_copy_s: a plain copy and its fsync, no check; ceiling: the ratio that alone allows.
      baseline: {
        mib_per_s: rawMiBs,
        seconds: median(raw.wall),
        cpu_s: median(raw.cpu),
        flushed_copy_s: median(flushed),
        ceiling: median(raw.wall) / median(flushed),
      },
      ratio: oursMiBs / rawMiBs,
      target: '>= 0.25 of a plain file copy',
    };
  } finally {
    writer?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<BenchResult[]> {
  return [
    await measure('one table', oneTable),
    await measure('store-shaped (5 tables and their indexes)', storeShaped),
    // Not the target's files (their WAL is empty, as after a quiet spell): what the fold costs.
    await measure('one table, 20,000 more rows (~4 MiB) in its WAL', oneTable, 20_000),
  ];
}
