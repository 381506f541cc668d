import { chmodSync, closeSync, statSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { MAIN, runPosd, spawnDaemon, type DaemonProcess } from '../helpers/process.js';

// Issue 16: the stumbles of a store manager on a fresh box, replayed with separate processes and real folders.

const dirs: string[] = [];
const daemons: DaemonProcess[] = [];
let blocker: Server | undefined;

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'posd-mgr-'));
  dirs.push(d);
  return d;
}

function serve(args: string[], env: Record<string, string> = {}): DaemonProcess {
  const d = spawnDaemon(args, env);
  // A loaded 2-core box may take several seconds to start posd (issue 16 measured 5-9 s).
  const waitFor = d.waitFor;
  d.waitFor = (re, timeoutMs = 60_000) => waitFor(re, timeoutMs);
  daemons.push(d);
  return d;
}

async function stop(d: DaemonProcess): Promise<void> {
  d.child.kill('SIGTERM');
  expect(await d.exited).toEqual({ code: 0, signal: null });
}

afterEach(async () => {
  for (const d of daemons.splice(0)) {
    if (d.child.exitCode === null && d.child.signalCode === null) {
      d.child.kill('SIGKILL');
      await d.exited;
    }
  }
  if (blocker) await new Promise((r) => blocker!.close(r));
  blocker = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the role is remembered', () => {
  it(
    'a central made with init --role central serves as a central without --role, and refuses a mismatched --role in one line',
    { timeout: 180_000 },
    async () => {
      const d = dir();
      expect((await runPosd(['init', '--role', 'central', '--data', d, '--json'])).code).toBe(0);
      const central = serve(['--data', d, '--port', '0']);
      const m = await central.waitFor(/"role":"(store|central)"/);
      expect(m[1]).toBe('central');
      await stop(central);

      const wrong = serve(['--data', d, '--port', '0', '--role', 'store']);
      expect((await wrong.exited).code).toBe(2);
      const lines = wrong.stderr().trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^posd: .* holds a central installation, not a store/);

      const same = serve(['--data', d, '--port', '0', '--role', 'central']);
      expect((await same.waitFor(/"role":"(store|central)"/))[1]).toBe('central');
      await stop(same);
    },
  );

  it('serve --role central on an empty folder makes a central; a store joining a store is told it is not a central', { timeout: 180_000 }, async () => {
    const c = dir();
    const central = serve(['--data', c, '--port', '0', '--role', 'central']);
    const [, key] = await central.waitFor(/live key\s+(sk_live_[0-9A-Za-z]+)/);
    const [, port] = await central.waitFor(/"url":"http:\/\/127\.0\.0\.1:(\d+)\/api"/);
    expect(central.stdout()).toMatch(/"role":"central"/);
    await stop(central);

    // The same folder served again later, plainly, is still the central.
    const again = serve(['--data', c, '--port', port]);
    expect((await again.waitFor(/"role":"(store|central)"/))[1]).toBe('central');
    await stop(again);

    const s = dir();
    const store = serve(['--data', s, '--port', '0']);
    const [, storeKey] = await store.waitFor(/live key\s+(sk_live_[0-9A-Za-z]+)/);
    const [, storePort] = await store.waitFor(/"url":"http:\/\/127\.0\.0\.1:(\d+)\/api"/);
    const joiner = dir();
    const r = await runPosd(['init', '--central-url', `http://127.0.0.1:${storePort}`, '--central-key', storeKey, '--data', joiner]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^posd: that server is not a central/);
    expect(r.stderr).not.toMatch(/refused the key/);
    expect(existsSync(join(joiner, 'posd.db'))).toBe(false);
    expect(key).toMatch(/^sk_live_/);
    await stop(store);
  });
});

describe('keys are never lost', () => {
  it('a first start on a busy port makes no installation; the next start shows the keys', { timeout: 180_000 }, async () => {
    blocker = createServer();
    blocker.listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const busy = (blocker.address() as { port: number }).port;
    const d = dir();
    const first = serve(['--data', d, '--port', String(busy)]);
    expect((await first.exited).code).toBe(2);
    expect(first.stderr()).toMatch(/already in use/);
    expect(first.stderr()).not.toMatch(/sk_test_/);

    const second = serve(['--data', d, '--port', '0']);
    const [, testKey] = await second.waitFor(/test key\s+(sk_test_[0-9A-Za-z]+)/);
    const [, port] = await second.waitFor(/"url":"http:\/\/127\.0\.0\.1:(\d+)\/api"/);
    const res = await request(`http://127.0.0.1:${port}/api/test`, { headers: { 'x-secret-key': testKey } });
    expect(res.statusCode).toBe(200);
    await res.body.text();
    await stop(second);
  });

  it('no command but init and serve creates a data folder', { timeout: 180_000 }, async () => {
    const base = dir();
    const commands = [['keys', 'list'], ['accounts', 'list'], ['sync', 'status'], ['terminals', 'list', '--account', 'ac_x'], ['backup'], ['doctor']];
    for (const args of commands) {
      const d = join(base, args.join('-'));
      const r = await runPosd([...args, '--data', d]);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(existsSync(d), `${args.join(' ')} created ${d}`).toBe(false);
      expect(r.stderr, args.join(' ')).not.toMatch(/\n\s+at /);
    }
    const manager = await runPosd(['manager', 'set-password', '--password-stdin', '--data', join(base, 'm')]);
    expect(manager.code).toBe(2);
    expect(manager.stderr).toMatch(/no installation in/);
    expect(existsSync(join(base, 'm'))).toBe(false);
  });
});

describe('errors that name what to fix', () => {
  it('a data folder posd cannot write is named, not reported as a listening problem', { timeout: 180_000 }, async () => {
    const base = dir();
    chmodSync(base, 0o755);
    const d = join(base, 'data');
    mkdirSync(d, { mode: 0o755 });
    // As root every folder is writable: the start runs as nobody, for whom this root-owned folder is not.
    const asOther = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
    if (!asOther.uid) chmodSync(d, 0o555);
    // nobody must reach the program itself: a clone in a 0700 temp folder (CI's mktemp -d) is opened
    // for traversal (o+x) for this one start, and put back after.
    const reopened = asOther.uid ? openForTraversal(MAIN) : [];
    let code: number | null;
    let err = '';
    try {
      const child = spawn(process.execPath, [MAIN, 'serve', '--data', d, '--port', '0'], { ...asOther, cwd: base, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stderr.on('data', (c) => (err += c));
      child.stdout.resume();
      [code] = await once(child, 'exit');
    } finally {
      for (const [dir, mode] of reopened) chmodSync(dir, mode);
    }
    expect(code).toBe(2);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toContain(`cannot write in the data folder ${d} (EACCES`);
    expect(err).not.toMatch(/listen/);
  });

  it('a misspelt setting stops the start with its path; a bad choice lists the choices; a misspelt variable is named', { timeout: 180_000 }, async () => {
    const d = dir();
    const cfg = join(d, 'posd.json');
    writeFileSync(cfg, JSON.stringify({ htp: { port: 8080 } }));
    const typo = serve(['--data', join(d, 'data'), '--config', cfg]);
    expect((await typo.exited).code).toBe(2);
    expect(typo.stderr().trim()).toMatch(/^posd: config: htp: unknown setting \(known here: .*http/);
    const choice = serve(['--data', join(d, 'data')], { POSD_LOG_LEVEL: 'loud' });
    expect((await choice.exited).code).toBe(2);
    expect(choice.stderr().trim()).toBe('posd: config: log.level: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")');
    // A misspelt variable is no setting: the start goes on, and says it is ignored and what was meant (issue 37).
    const env = serve(['--data', join(d, 'data'), '--port', '0'], { POSD_HTP_PORT: '8080' });
    await env.waitFor(/"url":"http:\/\/127\.0\.0\.1:\d+\/api"/);
    expect(env.stderr()).toContain('posd: warning: POSD_HTP_PORT is not a setting posd knows; it is ignored (did you mean POSD_HTTP_');
    await stop(env);
  });

  it('the first start prints the keys last, then the status page and the password command; the settings stay at debug', { timeout: 180_000 }, async () => {
    const d = dir();
    // One file for both streams, as a terminal or the journal shows them: the order is the order written.
    const out = join(d, 'out.log');
    const fd = openSync(out, 'w');
    const child = spawn(process.execPath, [MAIN, 'serve', '--data', join(d, 'data'), '--port', '0'], {
      env: { ...process.env, POSD_LOG_FORMAT: 'json' },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    const deadline = Date.now() + 120_000;
    while (!/Set its password/.test(readFileSync(out, 'utf8')) && Date.now() < deadline && child.exitCode === null)
      await new Promise((r) => setTimeout(r, 100));
    child.kill('SIGTERM');
    await once(child, 'exit');
    const lines = readFileSync(out, 'utf8').split('\n');
    const keyLine = lines.findIndex((l) => /live key\s+sk_live_/.test(l));
    const listening = lines.findIndex((l) => l.includes('"msg":"posd listening"'));
    expect(keyLine).toBeGreaterThan(listening);
    expect(listening).toBeGreaterThanOrEqual(0);
    const page = lines.findIndex((l) => /Status page\s+http:\/\/127\.0\.0\.1:\d+\//.test(l));
    expect(page).toBeGreaterThan(keyLine);
    expect(lines[page + 1]).toMatch(/posd manager set-password --data /);
    expect(lines.some((l) => l.includes('"msg":"configuration"'))).toBe(false);
  });
});

/** Adds o+x to each folder above `file` that lacks it; returns the folders and their former modes. */
function openForTraversal(file: string): Array<[string, number]> {
  const changed: Array<[string, number]> = [];
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    const mode = statSync(dir).mode & 0o7777;
    if ((mode & 0o001) === 0) {
      chmodSync(dir, mode | 0o001);
      changed.push([dir, mode]);
    }
  }
  return changed;
}
