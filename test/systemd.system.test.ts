import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const unit = readFileSync(new URL('../systemd/posd.service', import.meta.url), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'posd-systemd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('systemd/posd.service', () => {
  it('is accepted by systemd-analyze verify', () => {
    // verify insists the ExecStart binary exists; point it at a stand-in, keeping every other line.
    const bin = join(dir, 'posd');
    writeFileSync(bin, '#!/bin/sh\nexit 0\n');
    chmodSync(bin, 0o755);
    const path = join(dir, 'posd.service');
    writeFileSync(path, unit.replace('/opt/posd/bin/posd', bin));
    const r = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
    expect(r.stderr.trim()).toBe('');
    expect(r.status).toBe(0);
  });

  it('runs as a dedicated user with a state directory, restarts on failure and is hardened', () => {
    for (const line of [
      'User=posd',
      'StateDirectory=posd',
      'CacheDirectory=posd',
      'Restart=on-failure',
      'ProtectSystem=strict',
      'NoNewPrivileges=yes',
      'PrivateTmp=yes',
    ]) {
      expect(unit).toContain(`\n${line}\n`);
    }
    const out = execFileSync('systemd-analyze', ['security', '--offline=true', join(dir, 'posd.service')], { encoding: 'utf8' });
    const score = Number(/Overall exposure level for .*?: ([\d.]+)/.exec(out)?.[1]);
    expect(score).toBeLessThan(3);
  });

  it('is Type=notify with a watchdog, accepting notifications from the systemd-notify child', () => {
    for (const line of ['Type=notify', 'NotifyAccess=all', 'WatchdogSec=60s']) expect(unit).toContain(`\n${line}\n`);
    expect(unit).not.toMatch(/\nType=(exec|simple)\n/);
  });

  it('the sysusers file creates the posd user', () => {
    const root = join(dir, 'root');
    mkdirSync(join(root, 'etc'), { recursive: true });
    const r = spawnSync('systemd-sysusers', [`--root=${root}`, new URL('../systemd/posd.sysusers', import.meta.url).pathname], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(readFileSync(join(root, 'etc/passwd'), 'utf8')).toMatch(/^posd:x:\d+:\d+:posd point-of-sale daemon:\/var\/lib\/posd:/m);
    expect(readFileSync(join(root, 'etc/group'), 'utf8')).toMatch(/^dialout:x:\d+:posd$/m);
  });

  it('the central-front template unit verifies, is hardened and restarts always (a front is stateless)', () => {
    const front = readFileSync(new URL('../systemd/posd-front@.service', import.meta.url), 'utf8');
    const bin = join(dir, 'posd');
    writeFileSync(bin, '#!/bin/sh\nexit 0\n');
    chmodSync(bin, 0o755);
    const path = join(dir, 'posd-front@4301.service');
    writeFileSync(path, front.replace('/opt/posd/bin/posd', bin));
    const r = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
    expect(r.stderr.trim()).toBe('');
    expect(r.status).toBe(0);
    expect(front).toContain('--role central-front --config /etc/posd/front.json --port %i');
    for (const line of ['Type=notify', 'User=posd', 'Restart=always', 'ProtectSystem=strict', 'PrivateDevices=yes', 'CacheDirectory=posd'])
      expect(front).toContain(`\n${line}\n`);
    expect(front).not.toContain('StateDirectory=');
    const out = execFileSync('systemd-analyze', ['security', '--offline=true', path], { encoding: 'utf8' });
    expect(Number(/Overall exposure level for .*?: ([\d.]+)/.exec(out)?.[1])).toBeLessThan(3);
  });
});
