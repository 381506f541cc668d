import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { MAIN } from '../helpers/process.js';

// Issue 17, hole 3: under umask 022 the data folder is 0700 and every file posd writes is 0600:
// the database and its -wal/-shm, key and lock files, nightly-style and `--to FILE` backups.
const parent = mkdtempSync(join(tmpdir(), 'posd-modes-'));
const data = join(parent, 'data');
const children: ReturnType<typeof spawn>[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(parent, { recursive: true, force: true });
});

/** `posd ARGS` started from a shell whose umask is 022, as on most systems. */
function posd022(args: string[]) {
  const child = spawn('sh', ['-c', 'umask 022; exec "$0" "$@"', process.execPath, MAIN, ...args], {
    env: { ...process.env, POSD_LOG_FORMAT: 'json', POSD_LIMITS_PER_KEY_PER_SECOND: '10000' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const until = (re: RegExp) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const m = out.match(re);
        if (m) return resolve(m);
        if (child.exitCode !== null) return reject(new Error(`posd exited before ${re}:\n${out}`));
        setTimeout(check, 50);
      };
      check();
    });
  return { child, until, output: () => out, exited: once(child, 'exit').then(([code]) => code as number) };
}

const mode = (p: string) => statSync(p).mode & 0o777;
/** Every folder and file under `dir` with its mode. */
function modesUnder(dir: string): Array<[string, number]> {
  const out: Array<[string, number]> = [[dir, mode(dir)]];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...modesUnder(p));
    else out.push([p, mode(p)]);
  }
  return out;
}
const expectOwnerOnly = (entries: Array<[string, number]>) => {
  for (const [p, m] of entries) expect([p, m.toString(8)]).toEqual([p, statSync(p).isDirectory() ? '700' : '600']);
};

async function serveAndWrite() {
  const d = posd022(['serve', '--data', data, '--port', '0']);
  const [, base] = await d.until(/API\s+(http:\/\/127\.0\.0\.1:\d+\/api)/);
  const key = (await d.until(/test key\s+(sk_test_[0-9A-Za-z]+)/))[1];
  await d.until(/"msg":"posd listening"/);
  const res = await request(`${base}/services`, {
    method: 'POST',
    headers: { 'x-secret-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'appointment', name: 'Cut', duration_minutes: 45, price_in_cents: 10_000 }),
  });
  expect(res.statusCode).toBe(201);
  await res.body.dump();
  return d;
}

describe('file modes whatever the umask', () => {
  it('data folder 0700; database, -wal, -shm, key, lock and backups 0600', { timeout: 120_000 }, async () => {
    const d = await serveAndWrite();
    const files = modesUnder(data).map(([p]) => p);
    expect(files).toEqual(expect.arrayContaining([join(data, 'posd.db'), join(data, 'posd.db-wal'), join(data, 'posd.db-shm')]));
    expectOwnerOnly(modesUnder(data));

    const to = join(parent, 'copy.db');
    const manual = posd022(['backup', '--data', data, '--to', to]);
    expect(await manual.exited).toBe(0);
    expect(mode(to).toString(8)).toBe('600');
    const nightly = posd022(['backup', '--data', data]);
    expect(await nightly.exited).toBe(0);
    expectOwnerOnly(modesUnder(data));
    expect(readdirSync(join(data, 'backups')).length).toBeGreaterThan(0);

    d.child.kill('SIGTERM');
    await d.exited;
    // What an older posd left wide is narrowed at the next start.
    chmodSync(data, 0o755);
    chmodSync(join(data, 'posd.db'), 0o644);
    const again = posd022(['serve', '--data', data, '--port', '0']);
    await again.until(/"msg":"posd listening"/);
    expectOwnerOnly(modesUnder(data));
    again.child.kill('SIGTERM');
    await again.exited;
  });
});
