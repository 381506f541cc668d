import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { MAIN, runPosd } from '../helpers/process.js';
import { until } from '../helpers/until.js';
import { inspectDatabase } from '../../src/system/backup.js';

// Issue 37: "Not yet tried anywhere: SIGKILL during a backup, a restore". The process is killed the
// way a power cut ends it (no handler runs), at a point the test waits for; then the files are read.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'posd-powercut-'));
  dirs.push(d);
  return d;
}

/** Rows written and committed before the cut: what must survive it. */
function addEvents(data: string, accountId: string, from: number, n: number): void {
  const db = new Database(join(data, 'posd.db'));
  db.pragma('busy_timeout = 5000');
  const ins = db.prepare(
    `INSERT INTO events (id, account_id, live_mode, type, object_id, payload, created_at) VALUES (?, ?, 0, 'intent.succeeded', NULL, ?, ?)`,
  );
  const pad = 'x'.repeat(600);
  db.transaction(() => {
    for (let i = from; i < from + n; i++) ins.run(`evt_cut${String(i).padStart(10, '0')}`, accountId, JSON.stringify({ i, pad }), new Date().toISOString());
  })();
  db.close();
}

function eventCount(file: string): number {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT count(*) FROM events WHERE id LIKE 'evt_cut%'").pluck().get() as number;
  } finally {
    db.close();
  }
}

/** Runs `posd args`, SIGKILLs it once `ready()` holds, and says whether the kill landed before it exited. */
async function killWhen(args: string[], ready: () => boolean): Promise<{ killed: boolean }> {
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit');
  let done = false;
  void exited.then(() => (done = true));
  await until(`${args[0]} to reach the point of the cut`, () => ready() || done, 120_000, 5);
  const killed = !done && child.kill('SIGKILL');
  await exited;
  return { killed };
}

describe('a power cut', () => {
  it('during a backup: the live database is whole, no backup file is left half-written, the next backup holds everything', { timeout: 600_000 }, async () => {
    const root = dir();
    const data = join(root, 'data');
    const inst = JSON.parse((await runPosd(['init', '--data', data, '--json'])).stdout) as { sandbox_id: string };
    addEvents(data, inst.sandbox_id, 0, 60_000);
    const dest = join(root, 'cut.db');
    const cut = await killWhen(['backup', '--data', data, '--to', dest], () => existsSync(`${dest}.partial`));
    expect(cut.killed).toBe(true);
    // Only the working copy is left, never a file under the backup's name.
    expect(existsSync(dest)).toBe(false);
    expect(inspectDatabase(join(data, 'posd.db'))).toMatchObject({ ok: true });
    expect(eventCount(join(data, 'posd.db'))).toBe(60_000);

    // The next backup under the same name starts over and is whole.
    const again = await runPosd(['backup', '--data', data, '--to', dest]);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(readdirSync(root).filter((n) => n.startsWith('cut.db'))).toEqual(['cut.db']);
    expect(inspectDatabase(dest)).toMatchObject({ ok: true });
    expect(eventCount(dest)).toBe(60_000);
  });

  it('during a restore: posd.db is whole (the old one or the restored one), and the restore run again finishes it', { timeout: 600_000 }, async () => {
    const root = dir();
    const data = join(root, 'data');
    const inst = JSON.parse((await runPosd(['init', '--data', data, '--json'])).stdout) as { sandbox_id: string; recovery_key: string };
    addEvents(data, inst.sandbox_id, 0, 60_000);
    const backup = join(root, 'backup.db');
    expect((await runPosd(['backup', '--data', data, '--to', backup])).code).toBe(0);
    // Sold after the backup: what the restore replaces.
    addEvents(data, inst.sandbox_id, 60_000, 500);
    const target = join(data, 'posd.db');
    const cut = await killWhen(['restore', backup, '--data', data, '--without-secrets'], () => existsSync(`${target}.restoring`));
    expect(cut.killed).toBe(true);
    expect(inspectDatabase(target)).toMatchObject({ ok: true });
    expect([60_000, 60_500]).toContain(eventCount(target));

    const again = await runPosd(['restore', backup, '--data', data, '--without-secrets']);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(inspectDatabase(target)).toMatchObject({ ok: true });
    expect(eventCount(target)).toBe(60_000);
    expect(existsSync(`${target}.restoring`)).toBe(false);
    // The database the restore replaced is kept whole beside it, the 500 later sales in it.
    const kept = readdirSync(data).filter((n) => n.startsWith('posd.db.pre-restore-'));
    expect(kept.length).toBeGreaterThanOrEqual(1);
    expect(kept.map((n) => eventCount(join(data, n)))).toContain(60_500);
  });
});
