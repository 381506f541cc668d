import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { SdNotify } from '../../src/system/sd-notify.js';
import { spawnDaemon, type DaemonProcess } from '../helpers/process.js';

/** A real unix datagram socket, as systemd has: python3 binds it and prints each message as JSON. */
function listen(path: string) {
  const child: ChildProcess = spawn(
    'python3',
    [
      '-u',
      '-c',
      [
        'import socket, sys, json',
        's = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)',
        's.bind(sys.argv[1])',
        'print("bound", flush=True)',
        'while True:',
        '    print(json.dumps(s.recv(65536).decode()), flush=True)',
      ].join('\n'),
      path,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const messages: string[] = [];
  const waiters: Array<() => void> = [];
  let buffer = '';
  let bound!: () => void;
  const ready = new Promise<void>((r) => (bound = r));
  child.stdout!.on('data', (d) => {
    buffer += d;
    let i;
    while ((i = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      if (line === 'bound') bound();
      else messages.push(JSON.parse(line));
      waiters.splice(0).forEach((w) => w());
    }
  });
  return {
    ready,
    messages,
    /** Resolves once `count` messages matching `re` have arrived. */
    until(re: RegExp, count = 1): Promise<string[]> {
      return new Promise((resolve) => {
        const check = () => {
          const found = messages.filter((m) => re.test(m));
          if (found.length >= count) resolve(found);
          else waiters.push(check);
        };
        check();
      });
    },
    close: () => child.kill('SIGTERM'),
  };
}

let dir: string;
let daemon: DaemonProcess | undefined;
let listener: ReturnType<typeof listen> | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) {
    daemon.child.kill('SIGKILL');
    await daemon.exited;
  }
  daemon = undefined;
  listener?.close();
  listener = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('systemd notify', () => {
  it('posd serve sends READY=1 after a full start, WATCHDOG=1 at half the interval, STOPPING=1 on the way out', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-notify-'));
    const socket = join(dir, 'notify.sock');
    listener = listen(socket);
    await listener.ready;
    daemon = spawnDaemon(['--data', join(dir, 'data'), '--port', '0'], { NOTIFY_SOCKET: socket, WATCHDOG_USEC: '300000' });
    const [ready] = await listener.until(/READY=1/);
    expect(ready.split('\n')).toEqual(expect.arrayContaining(['READY=1', `MAINPID=${daemon.child.pid}`]));
    const url = /STATUS=serving (http:\/\/127\.0\.0\.1:\d+)/.exec(ready)?.[1];
    // By READY the daemon already answers (the database is migrated and the port listens).
    const health = await request(`${url}/healthz`);
    expect(health.statusCode).toBe(200);
    await health.body.dump();
    await listener.until(/WATCHDOG=1/, 2);
    expect(listener.messages.some((m) => /STOPPING=1/.test(m))).toBe(false);
    daemon.child.kill('SIGTERM');
    await listener.until(/STOPPING=1/);
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
  });

  it('is a no-op without NOTIFY_SOCKET, and skips the watchdog meant for another process', async () => {
    const errors: Error[] = [];
    const off = new SdNotify({}, '/nonexistent/systemd-notify', (e) => errors.push(e));
    expect(off.enabled).toBe(false);
    await off.ready();
    await off.stopping();
    expect(off.watchdogIntervalMs()).toBeNull();
    expect(errors).toEqual([]); // the missing binary was never run

    const other = new SdNotify({ NOTIFY_SOCKET: '/run/x', WATCHDOG_USEC: '10000000', WATCHDOG_PID: String(process.pid + 1) });
    expect(other.watchdogIntervalMs()).toBeNull();
    const mine = new SdNotify({ NOTIFY_SOCKET: '/run/x', WATCHDOG_USEC: '10000000', WATCHDOG_PID: String(process.pid) });
    expect(mine.watchdogIntervalMs()).toBe(5000);

    const broken = new SdNotify({ NOTIFY_SOCKET: '/run/x' }, '/nonexistent/systemd-notify', (e) => errors.push(e));
    await broken.ready(); // resolves; the failure is reported, never thrown
    expect(errors).toHaveLength(1);
  });
});
