import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { runPosd, spawnDaemon, type DaemonProcess } from '../helpers/process.js';

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
  it('a central made with init --role central serves as a central without --role, and refuses a mismatched --role in one line', { timeout: 180_000 }, async () => {
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
  });

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
    const commands = [
      ['keys', 'list'],
      ['accounts', 'list'],
      ['sync', 'status'],
      ['terminals', 'list', '--account', 'ac_x'],
      ['backup'],
      ['doctor'],
    ];
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
