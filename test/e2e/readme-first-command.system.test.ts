import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The README's first command: the block under "Two commands", as written. */
function firstCommand(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const m = /## Two commands\n[\s\S]*?```sh\n([\s\S]*?)\n```/.exec(readme);
  if (!m) throw new Error('README.md has no first command under "## Two commands"');
  return m[1];
}

// Issue 30: the README's first command works as written for someone who has just cloned the
// repository: a fresh clone of this one's last commit (what a reader gets), the command run by bash
// unchanged, the npm cache as this machine has it. Only the port comes from outside the command
// (POSD_CONFIG, a file with `http.port` 0), so the test can run beside anything on 4242.
it('npm ci && npm run build && npx posd serve in a fresh clone: the sandbox key on stderr and a first answer', async () => {
  const command = firstCommand();
  expect(command).toBe('npm ci && npm run build && npx posd serve');
  const dir = mkdtempSync(join(tmpdir(), 'posd-readme-'));
  const clone = join(dir, 'posd');
  execFileSync('git', ['clone', '--quiet', ROOT, clone]);
  const config = join(dir, 'port.json');
  writeFileSync(config, JSON.stringify({ http: { port: 0 } }));
  // Its own process group: npm, npx and node under it are stopped together.
  const child = spawn('bash', ['-e', '-c', command], {
    cwd: clone,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      POSD_CONFIG: config,
      npm_config_prefer_offline: 'true',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const banner = await new Promise<RegExpExecArray>((resolve, reject) => {
      child.stderr.on('data', (d) => {
        err += d;
        const m = /API\s+(http:\/\/127\.0\.0\.1:\d+\/api)[\s\S]*test key\s+(sk_test_\w+)/.exec(err);
        if (m) resolve(m);
      });
      void exited.then((code) => reject(new Error(`the command ended (${code}) before the daemon printed its keys\nstdout:\n${out}\nstderr:\n${err}`)));
    });
    const [, api, key] = banner;
    const res = await request(`${api}/test`, { headers: { 'x-secret-key': key } });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toMatchObject({ environment: 'sandbox' });
    // The data folder is the README's `./data`, in the clone.
    expect(existsSync(join(clone, 'data', 'posd.db'))).toBe(true);
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // the group is gone already
    }
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}, 600_000);
