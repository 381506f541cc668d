import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { validateConfig, type Config } from '../../src/config.js';
import { startDaemon, WorkerStartError } from '../../src/daemon.js';
import type { ApiApp, PosdModule } from '../../src/api/module.js';
import type { AppContext } from '../../src/context.js';
import { MODULES } from '../../src/modules/index.js';
import { pidFile } from '../../src/system/daemon-lock.js';
import { spawnDaemon, UNBUNDLED_MAIN } from '../helpers/process.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function config(): Config {
  dir = mkdtempSync(join(tmpdir(), 'posd-start-'));
  return validateConfig({ data_dir: dir, http: { port: 0, host: '127.0.0.1' }, log: { level: 'silent' } });
}

/** Resolves once a new server has listened on `port` and closed again: nothing else holds it. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

describe('a worker that fails at start stops the daemon cleanly', () => {
  it('in process: the port closes, the workers started are stopped, the database closes, the folder is released', async () => {
    const cfg = config();
    const events: string[] = [];
    let app: ApiApp | undefined;
    let ctx: AppContext | undefined;
    const failing: PosdModule = {
      name: 'failing-fixture',
      root(a, c) {
        app = a;
        ctx = c;
      },
      workers: () => [
        { name: 'fine', start: () => void events.push('fine started'), stop: () => void events.push('fine stopped') },
        {
          name: 'doomed',
          start() {
            events.push('doomed starting');
            throw new Error('no device');
          },
          stop: () => void events.push('doomed stopped'),
        },
        { name: 'never', start: () => void events.push('never started'), stop: () => void events.push('never stopped') },
      ],
    };
    const err = await startDaemon({ config: cfg, modules: [...MODULES, failing], log: pino({ level: 'silent' }) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkerStartError);
    expect((err as Error).message).toBe('the doomed worker failed to start: no device');
    // The half-started worker is stopped too (it may hold what it made before throwing); the one after it never ran.
    expect(events).toEqual(['fine started', 'doomed starting', 'doomed stopped', 'fine stopped']);
    const address = app!.server.address();
    expect(address).toBeNull();
    expect(ctx!.db.open).toBe(false);
    expect(ctx!.shutdown.aborted).toBe(true);
    expect(existsSync(pidFile(cfg))).toBe(false);

    // The folder can be served again at once.
    const again = await startDaemon({ config: cfg, log: pino({ level: 'silent' }) });
    expect(await again.stop()).toBe(true);
  });

  it('posd serve as a process: one line, exit code 1, the port free and the folder released', async () => {
    const cfg = config();
    const preload = fileURLToPath(new URL('../../dist/test/helpers/failing-worker.js', import.meta.url));
    const daemon = spawnDaemon(['--data', dir, '--port', '0'], { NODE_OPTIONS: `--import=${preload}`, POSD_LOG_LEVEL: 'silent' }, UNBUNDLED_MAIN);
    // The process ends by itself: nothing the daemon started is left holding the event loop.
    const { code, signal } = await daemon.exited;
    expect(signal).toBeNull();
    expect(code).toBe(1);
    // The last line (a first start shows the new installation's keys above it).
    const line = daemon.stderr().trim().split('\n').at(-1)!;
    const m = line.match(/^posd: the doomed worker failed to start: cannot start \(port (\d+)\)$/);
    expect(m, daemon.stderr()).not.toBeNull();
    expect(await portIsFree(Number(m![1]))).toBe(true);
    expect(existsSync(pidFile(cfg))).toBe(false);
  });
});

describe('stopping', () => {
  it('resolves false when a worker fails to stop, after stopping the rest and closing the database', async () => {
    const cfg = config();
    const events: string[] = [];
    const sticky: PosdModule = {
      name: 'sticky-fixture',
      workers: () => [
        { name: 'first', start: () => undefined, stop: () => void events.push('first stopped') },
        {
          name: 'sticky',
          start: () => undefined,
          stop() {
            throw new Error('still busy');
          },
        },
      ],
    };
    const daemon = await startDaemon({ config: cfg, modules: [...MODULES, sticky], log: pino({ level: 'silent' }) });
    const port = Number(new URL(daemon.url).port);
    expect(await daemon.stop()).toBe(false);
    expect(events).toEqual(['first stopped']);
    expect(daemon.ctx.db.open).toBe(false);
    expect(existsSync(pidFile(cfg))).toBe(false);
    expect(await portIsFree(port)).toBe(true);
  });

  it('posd serve exits with code 1 when a worker fails to stop', async () => {
    const cfg = config();
    const preload = fileURLToPath(new URL('../../dist/test/helpers/failing-worker.js', import.meta.url));
    const daemon = spawnDaemon(['--data', dir, '--port', '0'], { NODE_OPTIONS: `--import=${preload}`, FAILING_WORKER: 'stop' }, UNBUNDLED_MAIN);
    await daemon.waitFor(/posd listening/);
    daemon.child.kill('SIGTERM');
    const { code, signal } = await daemon.exited;
    expect(signal).toBeNull();
    expect(code).toBe(1);
    expect(daemon.stdout()).toMatch(/stopping a worker failed/);
    expect(daemon.stderr().trim().split('\n').at(-1)).toBe('posd: stopped with errors (see the log)');
    expect(existsSync(pidFile(cfg))).toBe(false);
  });
});

describe('the WAL checkpoint thread', () => {
  it('starts with the first write, not before: an idle daemon runs without it (issue 16)', async () => {
    const cfg = config();
    // A first start writes the installation (the thread starts at once); the second serves the folder as a box restarts.
    const first = await startDaemon({ config: cfg, log: pino({ level: 'silent' }) });
    expect(await first.stop()).toBe(true);
    const lines = new EventEmitter();
    const seen: string[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => (seen.push(line), lines.emit('line', line)) });
    const daemon = await startDaemon({ config: cfg, log });
    try {
      const started = (l: string) => l.includes('WAL checkpoint thread starting');
      // A read answered and two check intervals gone by: the WAL is empty, no thread.
      const res = await fetch(`${daemon.url}/healthz`);
      expect(res.status).toBe(200);
      await new Promise((r) => setTimeout(r, cfg.database.checkpoint_interval_ms * 3));
      expect(seen.some(started)).toBe(false);
      const line = new Promise<string>((resolve) => lines.on('line', (l: string) => started(l) && resolve(l)));
      daemon.ctx.db.exec('CREATE TABLE first_write (x)');
      expect(await line).toMatch(/WAL checkpoint thread starting/);
    } finally {
      expect(await daemon.stop()).toBe(true);
    }
  });
});
