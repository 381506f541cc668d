import Database from 'better-sqlite3';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync, copyFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { MODULES_WITH_FIXTURE } from '../helpers/fixture-module.js';
import { runPosd } from '../helpers/process.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { tx } from '../../src/db/database.js';
import { backupDatabase } from '../../src/system/backup.js';
import { NightlyBackup, msUntilHour } from '../../src/modules/ops/nightly-backup.js';
import { lastBackupRun } from '../../src/modules/ops/store.js';

const dirs: string[] = [];
// The write load runs far past the per-key burst limit of a till.
const UNLIMITED = { http: { port: 0, host: '127.0.0.1' }, limits: { per_key_per_second: 1_000_000 } };
let server: TestServer | undefined;
const tmp = (p = 'posd-backup-') => {
  const d = mkdtempSync(join(tmpdir(), p));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  await server?.stop();
  server = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * Writers until stopped: live cash sales (the real write path: intent, checkout, ledger row, events
 * and sync fact in one transaction) or fixture notes. Every acknowledged (201) id is recorded.
 */
function writeLoad(s: TestServer, concurrency = 4, kind: 'cash_sales' | 'fixture_notes' = 'fixture_notes') {
  const acked: string[] = [];
  const refused: string[] = [];
  let stopped = false;
  let n = 0;
  const loops = Array.from({ length: concurrency }, async () => {
    while (!stopped) {
      if (kind === 'cash_sales') {
        const res = await s.api('POST', '/cash_sales', { key: s.installation.keys.live, body: { amount_in_cents: 100 + (n++ % 900), currency: 'GTQ' } });
        if (res.status === 201) acked.push(res.body.id);
        else refused.push(`${res.status} ${res.text}`);
      } else {
        const text = `note-${n++}`;
        const res = await s.api('POST', '/fixture_notes', { body: { text, amount_in_cents: 100 } });
        if (res.status === 201) acked.push(text);
        else refused.push(`${res.status} ${res.text}`);
      }
    }
  });
  return {
    acked,
    async stop() {
      stopped = true;
      await Promise.all(loops);
      // Every write was acknowledged: none was turned away while the backup ran.
      expect(refused).toEqual([]);
    },
  };
}

async function untilAcked(load: { acked: string[] }, count: number) {
  while (load.acked.length < count) await new Promise((r) => setImmediate(r));
}

/** Bulk rows so the copy takes many backup steps. */
function fill(s: TestServer, rows: number) {
  const ins = s.daemon.ctx.db.prepare('INSERT INTO fixture_notes (account_id, live_mode, text, amount) VALUES (?, 0, ?, 1)');
  tx(s.daemon.ctx.db, () => {
    for (let i = 0; i < rows; i++) ins.run(s.installation.sandbox_id, `bulk-${i}-${'x'.repeat(200)}`);
  });
}

function notesIn(file: string): Set<string> {
  const db = new Database(file, { readonly: true });
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    return new Set((db.prepare('SELECT text FROM fixture_notes').all() as Array<{ text: string }>).map((r) => r.text));
  } finally {
    db.close();
  }
}

describe('backups under write load', () => {
  it('a backup taken while writes keep landing holds every row acknowledged before it began and passes integrity_check', async () => {
    const dir = tmp();
    server = await startTestServer({ modules: MODULES_WITH_FIXTURE, dataDir: join(dir, 'data'), config: UNLIMITED });
    fill(server, 20_000);
    const load = writeLoad(server, 4, 'cash_sales');
    await untilAcked(load, 40);
    const ackedBefore = [...load.acked];
    // Commits, not answers: an answer follows its batch's flush, which the copy's own file work
    // in the thread pool may hold back past a short backup's last step (docs/commit-pipeline.md).
    const committed = () => server!.daemon.ctx.db.prepare("SELECT COUNT(*) FROM intents WHERE type = 'cash'").pluck().get() as number;
    let firstStepCommits = -1;
    let lastStepCommits = -1;
    const file = join(dir, 'under-load.db');
    await backupDatabase(join(dir, 'data', 'posd.db'), file, {
      onProgress: () => {
        if (firstStepCommits < 0) firstStepCommits = committed();
        lastStepCommits = committed();
      },
    });
    const committedDuring = lastStepCommits - firstStepCommits;
    await load.stop();
    // The writers really were committing between the copy's steps.
    expect(committedDuring).toBeGreaterThan(0);

    // Restored by the command line into a fresh data folder, it is whole and holds every acknowledged row.
    const restored = join(dir, 'restored');
    const r = await runPosd(['restore', file, '--data', restored]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const notes = notesIn(join(restored, 'posd.db'));
    expect([...notes].filter((t) => t.startsWith('bulk-'))).toHaveLength(20_000);
    const db = new Database(join(restored, 'posd.db'), { readonly: true });
    // A cash sale answers with its unified intent (in_); the intent and its cash record commit together.
    const sales = new Set(
      (db.prepare("SELECT i.id FROM intents i JOIN cash_intents c ON c.intent_id = i.id WHERE i.type = 'cash'").all() as Array<{ id: string }>).map(
        (r) => r.id,
      ),
    );
    db.close();
    expect(ackedBefore.length).toBeGreaterThan(0);
    for (const id of ackedBefore) expect(sales.has(id)).toBe(true);
    expect(sales.size).toBeGreaterThanOrEqual(ackedBefore.length);
  });

  it('copies a WAL database whose writer checkpoints after every commit: each backup is whole and holds an unbroken prefix of the commits', async () => {
    const dir = tmp();
    const source = join(dir, 'live.db');
    const setup = new Database(source);
    setup.pragma('journal_mode = WAL');
    setup.exec("CREATE TABLE accounts (id TEXT PRIMARY KEY); INSERT INTO accounts VALUES ('ac_x'); CREATE TABLE seq (n INTEGER PRIMARY KEY, pad TEXT)");
    setup.close();
    // Another thread, its own connection: commits rows 1, 2, 3... and checkpoints after each, so the
    // main file is rewritten under the copy while it runs (the case the held snapshot must survive).
    const sab = new SharedArrayBuffer(8);
    const progress = new Int32Array(sab); // [0]: commits made, [1]: stop
    const writer = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       const Database = require(workerData.lib);
       const db = new Database(workerData.file);
       db.pragma('busy_timeout = 5000');
       const ins = db.prepare('INSERT INTO seq (n, pad) VALUES (?, ?)');
       const shared = new Int32Array(workerData.sab);
       let n = 0;
       while (Atomics.load(shared, 1) === 0) {
         db.transaction(() => { for (let k = 0; k < 20; k++) ins.run(n * 20 + k + 1, 'p'.repeat(600)); })();
         n++;
         Atomics.store(shared, 0, n);
         if (n % 3 === 0) db.pragma('wal_checkpoint(PASSIVE)');
         if (n % 50 === 0) db.pragma('wal_checkpoint(TRUNCATE)');
       }
       db.close();
       parentPort.postMessage(n);`,
      { eval: true, workerData: { file: source, lib: createRequire(import.meta.url).resolve('better-sqlite3'), sab } },
    );
    const finished = new Promise<number>((resolve, reject) => {
      writer.once('message', resolve);
      writer.once('error', reject);
    });
    try {
      while (Atomics.load(progress, 0) < 200) await new Promise((r) => setImmediate(r));
      for (let i = 0; i < 6; i++) {
        const before = Atomics.load(progress, 0);
        const file = join(dir, `copy-${i}.db`);
        await backupDatabase(source, file);
        const after = Atomics.load(progress, 0);
        expect(existsSync(`${file}-wal`)).toBe(false);
        const copy = new Database(file, { readonly: true });
        expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
        const { rows, top } = copy.prepare('SELECT count(*) AS rows, coalesce(max(n), 0) AS top FROM seq').get() as { rows: number; top: number };
        copy.close();
        // Whole commits only (20 rows each), none missing below the highest, every commit made
        // before the backup began included, nothing from after it ended.
        expect(rows % 20).toBe(0);
        expect(top).toBe(rows);
        expect(rows / 20).toBeGreaterThanOrEqual(before);
        expect(rows / 20).toBeLessThanOrEqual(after);
      }
    } finally {
      Atomics.store(progress, 1, 1);
      await finished;
    }
  });

  it('posd backup runs beside the daemon process and records the run; restore refuses while a daemon runs', async () => {
    const dir = tmp();
    const data = join(dir, 'data');
    server = await startTestServer({ modules: MODULES_WITH_FIXTURE, dataDir: data, config: UNLIMITED });
    fill(server, 5_000);
    const backedUpAt = async () =>
      Number((await (await fetch(`${server!.url}/metrics`)).text()).match(/^posd_backup_last_success_timestamp_seconds (\S+)$/m)?.[1]);
    expect(await backedUpAt()).toBe(0);
    const load = writeLoad(server, 2);
    await untilAcked(load, 20);
    const ackedBefore = [...load.acked];
    const file = join(dir, 'manual.db');
    const b = await runPosd(['backup', '--data', data, '--to', file]);
    await load.stop();
    expect(b.stderr).toBe('');
    expect(b.code).toBe(0);
    // A box made without posd init has no recovery key: the backup makes one and shows it once.
    expect(b.stdout).toMatch(
      /^posd: this box had no recovery key; one was made: (rk-[0-9a-f]{12})\n {2}recovery key {2}POSD-RK1-[-0-9A-Z]+\n[\s\S]*posd: backup written to .*manual\.db \(\d+ bytes, integrity checked\)\n {2}holds: database, settings.* \(secrets sealed to recovery key \1\)\n$/,
    );
    expect(lastBackupRun(server.daemon.ctx.db)).toMatchObject({ file, trigger: 'manual', ok: 1 });
    // The daemon's /metrics counts a backup another process took (issue 37: it stayed 0).
    const at = await backedUpAt();
    expect(Math.abs(at * 1000 - Date.parse(lastBackupRun(server.daemon.ctx.db)!.finished_at))).toBeLessThan(1000);
    expect(Date.now() / 1000 - at).toBeLessThan(120);
    const notes = notesIn(file);
    for (const text of ackedBefore) expect(notes.has(text)).toBe(true);
    expect((await runPosd(['backup', '--data', data, '--to', file])).code).toBe(2); // never overwrites

    const before = readFileSync(join(data, 'posd.db'));
    const refused = await runPosd(['restore', file, '--data', data]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`^posd: posd is running on .* \\(pid ${process.pid}\\); stop it first`));
    expect(readFileSync(join(data, 'posd.db')).equals(before)).toBe(true);
  });
});

describe('posd restore', () => {
  /** A backup of a box made by posd init, and the recovery key init showed. */
  async function madeBackup(dir: string): Promise<{ file: string; recoveryKey: string }> {
    const data = join(dir, 'src');
    const init = await runPosd(['init', '--data', data, '--json']);
    expect(init.code).toBe(0);
    const file = join(dir, 'good.db');
    expect((await runPosd(['backup', '--data', data, '--to', file])).code).toBe(0);
    return { file, recoveryKey: JSON.parse(init.stdout).recovery_key };
  }

  it('checks the backup first: a damaged file or a newer schema changes nothing', async () => {
    const dir = tmp();
    const { file: good } = await madeBackup(dir);
    const target = join(dir, 'target');
    const inst = JSON.parse((await runPosd(['init', '--data', target, '--json'])).stdout);

    const damaged = join(dir, 'damaged.db');
    copyFileSync(good, damaged);
    const bytes = readFileSync(damaged);
    bytes.fill(0x5a, 4096 * 2, 4096 * 3); // scribble over a b-tree page
    writeFileSync(damaged, bytes);
    const r1 = await runPosd(['restore', damaged, '--data', target]);
    expect(r1.code).toBe(2);
    expect(r1.stderr).toMatch(/cannot be restored: .*nothing was changed/);

    const newer = join(dir, 'newer.db');
    copyFileSync(good, newer);
    const db = new Database(newer);
    db.pragma('user_version = 999');
    db.close();
    const r2 = await runPosd(['restore', newer, '--data', target]);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/schema version 999 is newer than this posd/);

    const r3 = await runPosd(['restore', join(dir, 'missing.db'), '--data', target]);
    expect(r3.code).toBe(2);

    // The target still holds its own installation.
    const list = JSON.parse((await runPosd(['accounts', 'list', '--data', target, '--json'])).stdout);
    expect(list.map((a: { id: string }) => a.id)).toContain(inst.account_id);
  });

  it('replaces the database, keeps the previous one aside and ignores a stale pid file whose pid was reused', async () => {
    const dir = tmp();
    const { file: good, recoveryKey } = await madeBackup(dir);
    const source = JSON.parse((await runPosd(['accounts', 'list', '--data', join(dir, 'src'), '--json'])).stdout);
    const target = join(dir, 'target');
    await runPosd(['init', '--data', target, '--json']);
    // A daemon that died without cleaning up, its pid since given to another live process (this one).
    writeFileSync(join(target, 'posd.pid'), `${process.pid} 1\n`);
    const r = await runPosd(['restore', good, '--data', target, '--recovery-key-file', '-'], {}, recoveryKey);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(readdirSync(target).some((n) => n.startsWith('posd.db.pre-restore-'))).toBe(true);
    expect(existsSync(join(target, 'posd.db-wal'))).toBe(false);
    const now = JSON.parse((await runPosd(['accounts', 'list', '--data', target, '--json'])).stdout);
    expect(now.map((a: { id: string }) => a.id).sort()).toEqual(source.map((a: { id: string }) => a.id).sort());
  });

  it("judges the restored box by the backup it came from, not the old box's run before it (issue 37)", async () => {
    const dir = tmp();
    const data = join(dir, 'src');
    const init = await runPosd(['init', '--data', data, '--json']);
    // The dead box's log: an older backup that left the signing key out (made before recovery keys).
    const old = new Database(join(data, 'posd.db'));
    old
      .prepare("INSERT INTO backup_runs (file, trigger, started_at, finished_at, bytes, ok, left_out) VALUES (?, 'manual', ?, ?, 1, 1, ?)")
      .run(
        '/dead/backups/manual-old.db',
        new Date(Date.now() - 3_600_000).toISOString(),
        new Date(Date.now() - 3_600_000).toISOString(),
        '["the webhook signing key"]',
      );
    old.close();
    const good = join(dir, 'good.db');
    expect((await runPosd(['backup', '--data', data, '--to', good])).code).toBe(0);
    const target = join(dir, 'target');
    await runPosd(['init', '--data', target, '--json']);
    const r = await runPosd(['restore', good, '--data', target, '--recovery-key-file', '-'], {}, JSON.parse(init.stdout).recovery_key);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`  backup log: ${good} (written `);
    const doctor = JSON.parse((await runPosd(['doctor', '--data', target, '--json'])).stdout) as {
      checks: Array<{ name: string; ok: boolean; detail: string }>;
    };
    const last = doctor.checks.find((c) => c.name === 'last backup');
    expect(last).toMatchObject({ ok: true });
    expect(last?.detail).toContain(good);
    expect(last?.detail).not.toContain('manual-old');
  });
});

describe('nightly backup', () => {
  it('waits for the configured local hour', () => {
    const at = new Date(2026, 0, 10, 2, 30).getTime();
    expect(msUntilHour(at, 3)).toBe(30 * 60_000);
    expect(msUntilHour(new Date(2026, 0, 10, 3, 0).getTime(), 3)).toBe(24 * 3600_000);
    expect(msUntilHour(new Date(2026, 0, 10, 4, 0).getTime(), 3)).toBe(23 * 3600_000);
  });

  it('names backups by time, keeps backup.keep of them, records each run and never deletes manual backups', async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T03:00:00.000Z'));
    const dir = tmp();
    const backups = join(dir, 'backups');
    server = await startTestServer({ clock, config: { backup: { dir: backups, keep: 2, hour: 3 } } });
    mkdirSync(backups);
    writeFileSync(join(backups, 'manual-20260101T000000Z.db'), 'kept');
    const worker = new NightlyBackup(server.daemon.ctx);
    for (let i = 0; i < 3; i++) {
      const out = await worker.runNow();
      expect(out.ok).toBe(true);
      clock.advance(24 * 3600_000);
    }
    expect(readdirSync(backups).sort()).toEqual(['manual-20260101T000000Z.db', 'nightly-20260302T030000Z.db', 'nightly-20260303T030000Z.db']);
    expect(lastBackupRun(server.daemon.ctx.db)).toMatchObject({ trigger: 'nightly', ok: 1, file: join(backups, 'nightly-20260303T030000Z.db') });
    expect(notesOrAccounts(join(backups, 'nightly-20260303T030000Z.db'))).toBeGreaterThan(0);
    const m = await (await fetch(`${server.url}/metrics`)).text();
    expect(m).toMatch(/posd_backup_last_success_timestamp_seconds \d+/);
  });
});

function notesOrAccounts(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    return (db.prepare('SELECT count(*) n FROM accounts').get() as { n: number }).n;
  } finally {
    db.close();
  }
}
