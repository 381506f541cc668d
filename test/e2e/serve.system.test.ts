import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { spawnDaemon, type DaemonProcess } from '../helpers/process.js';

let dir: string;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) {
    daemon.child.kill('SIGKILL');
    await daemon.exited;
  }
  daemon = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('posd serve as its own process', () => {
  it('first start makes the installation and prints the test key once; a second start reuses it', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-e2e-'));
    daemon = spawnDaemon(['--data', dir, '--port', '0']);
    const [, baseUrl] = await daemon.waitFor(/API\s+(http:\/\/127\.0\.0\.1:\d+\/api)/);
    const [, testKey] = await daemon.waitFor(/test key\s+(sk_test_[0-9A-Za-z]+)/);
    await daemon.waitFor(/"msg":"posd listening"/);
    const res = await request(`${baseUrl}/test`, { headers: { 'x-secret-key': testKey } });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toMatchObject({ environment: 'sandbox' });

    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    // Read once the process is gone, so every line it wrote is in: the key never reaches the log stream.
    expect(daemon.stdout()).toMatch(/"msg":"posd listening"/);
    expect(daemon.stdout()).not.toContain(testKey);

    daemon = spawnDaemon(['--data', dir, '--port', '0']);
    const [, port] = await daemon.waitFor(/"url":"http:\/\/127\.0\.0\.1:(\d+)\/api"/);
    const again = await request(`http://127.0.0.1:${port}/api/test`, { headers: { 'x-secret-key': testKey } });
    expect(again.statusCode).toBe(200);
    await again.body.text();
    // A banner would be written after the log line above: only once the process has exited has
    // everything it could print arrived. The second start prints no banner and no key.
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    expect(daemon.stderr()).not.toMatch(/sk_test_|new \w+ installation/);
    expect(daemon.stdout()).not.toContain(testKey);
  });

  it('a bad configuration stops the start with one line naming the field', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-e2e-'));
    daemon = spawnDaemon(['--data', dir], { POSD_HTTP_PORT: 'eighty', POSD_DATABASE_SYNCHRONOUS: 'SOMETIMES' });
    const { code } = await daemon.exited;
    expect(code).toBe(2);
    const lines = daemon.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^posd: config: (http\.port|database\.synchronous): /);
    expect(daemon.stderr()).not.toMatch(/\n\s+at /);
  });

  it('a port already in use gives a clear error, not a stack trace', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-e2e-'));
    const first = spawnDaemon(['--data', join(dir, 'a'), '--port', '0']);
    const [, port] = await first.waitFor(/"url":"http:\/\/127\.0\.0\.1:(\d+)\/api"/);
    daemon = spawnDaemon(['--data', join(dir, 'b'), '--port', port]);
    const { code } = await daemon.exited;
    first.child.kill('SIGTERM');
    await first.exited;
    expect(code).toBe(2);
    expect(daemon.stderr()).toMatch(new RegExp(`posd: port ${port} .* already in use`));
  });
});
