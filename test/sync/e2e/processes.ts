import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { assertBuilt } from '../../helpers/process.js';

const run = promisify(execFile);
export const ROOT = resolve(import.meta.dirname, '../../..');
export const MAIN = join(ROOT, 'dist/posd/posd.js');
export const SIMULATOR = join(ROOT, 'dist/devices/simulator/cli.js');

/** Every process started here that has not exited yet, so a failed test can leave none behind. */
const running = new Set<ChildProcess>();

function tracked(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/**
 * SIGKILLs every process started here that still runs, and waits for them: the last step of each
 * e2e file's afterAll, whatever failed before it (a test that threw mid-chaos, a beforeAll that
 * started the central but not the store, a daemon restarted after its handle was dropped).
 */
export async function killStarted(): Promise<void> {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          child.once('exit', () => done());
          child.kill('SIGKILL');
        }),
    ),
  );
}

// The test process itself ending (a worker torn down, Ctrl-C) takes its daemons with it.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

const tempDirs: string[] = [];

/** A fresh data folder for a daemon, removed by `removeTempDirs`. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

/** Removes the folders of `tempDir`; with POSD_E2E_LOG set they are kept (daemon.log) and listed. */
export function removeTempDirs(): void {
  if (process.env.POSD_E2E_LOG) return void console.log(tempDirs);
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function requireBuild(): void {
  if (!existsSync(MAIN) || !existsSync(SIMULATOR)) throw new Error('build first: npm run build (npm test runs it)');
  assertBuilt();
}

/** `posd <args>` as a separate process; resolves with parsed JSON stdout when --json is given. */
export async function posd(args: string[]): Promise<any> {
  const { stdout } = await run(process.execPath, [MAIN, ...args], { env: { ...process.env, POSD_LOG_LEVEL: 'warn' } });
  return args.includes('--json') ? JSON.parse(stdout) : stdout;
}

/** `posd <args>` as a separate process, with its exit code (non-zero does not throw). */
export async function posdExit(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [MAIN, ...args], { env: { ...process.env, POSD_LOG_LEVEL: 'warn' } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** A central's folder as a chain's first core starts from it: `posd init --role central`, an account and its live key. */
export async function chainCentralFolder(dir: string, accountName = 'Zona 10'): Promise<{ organizationId: string; accountId: string; key: string }> {
  const organizationId = (await posd(['init', '--role', 'central', '--name', 'Chain', '--json', '--data', dir])).organization_id as string;
  const accountId = (await posd(['accounts', 'create', '--name', accountName, '--organization', organizationId, '--json', '--data', dir])).account_id as string;
  const key = (await posd(['keys', 'create', '--account', accountId, '--env', 'live', '--json', '--data', dir])).key as string;
  return { organizationId, accountId, key };
}

export interface DaemonProcess {
  url: string;
  child: ChildProcess;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** `posd serve` in its own process with a JSON config file; resolves once it logs that it listens. */
export async function startDaemonProcess(dataDir: string, config: Record<string, unknown>): Promise<DaemonProcess> {
  const file = join(dataDir, 'test-config.json');
  writeFileSync(file, JSON.stringify({ data_dir: dataDir, http: { host: '127.0.0.1', port: 0 }, log: { level: 'info', format: 'json' }, ...config }));
  const child = tracked(spawn(process.execPath, [MAIN, 'serve'], { env: { ...process.env, POSD_CONFIG: file }, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  // The last log lines, told with the stderr when the daemon dies on its own (not by `kill`): a
  // test then fails on what killed it, not only on a refused connection.
  const recent: string[] = [];
  let killing = false;
  const kill = child.kill.bind(child);
  child.kill = (signal?: NodeJS.Signals | number) => {
    killing = true;
    return kill(signal);
  };
  child.once('exit', (code, signal) => {
    if (killing) return;
    console.error(`posd daemon (${dataDir}) exited on its own: code ${code}, signal ${signal}\n${stderr}\n${recent.join('\n')}`);
  });
  const url = await new Promise<string>((resolveUrl, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      recent.push(line.slice(0, 2000));
      if (recent.length > 20) recent.shift();
      if (process.env.POSD_E2E_LOG) appendFileSync(join(dataDir, 'daemon.log'), `${line}\n`);
      try {
        const msg = JSON.parse(line);
        if (msg.msg === 'posd listening') resolveUrl(String(msg.url).replace(/\/api$/, ''));
      } catch {
        /* a log line */
      }
    });
    child.once('exit', (code) => reject(new Error(`daemon exited (${code}) before listening: ${stderr}`)));
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    url,
    child,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

export interface SimulatorProcess {
  child: ChildProcess;
  /** The simulator's JSON lines, in order (`welcome`, `charge`, `result_ack`, `disconnected`, ...). */
  events: Array<{ event: string; data: unknown }>;
  stop(): Promise<void>;
}

/** The devices simulator CLI (a card terminal) in its own process; resolves once posd welcomed it. */
export async function startSimulatorProcess(opts: {
  url: string;
  terminalId: string;
  token: string;
  behaviour: string;
  delaysMs: { waiting: number; reading: number; authorizing: number };
  reconnectDelayMs: number;
  /** More simulator options (`--protocol 2 --offline ...`). */
  extraArgs?: string[];
}): Promise<SimulatorProcess> {
  const child = tracked(
    spawn(
      process.execPath,
      [
        SIMULATOR,
        '--url',
        opts.url,
        '--terminal-id',
        opts.terminalId,
        '--token',
        opts.token,
        '--behaviour',
        opts.behaviour,
        '--delay-waiting-card',
        String(opts.delaysMs.waiting),
        '--delay-reading',
        String(opts.delaysMs.reading),
        '--delay-authorizing',
        String(opts.delaysMs.authorizing),
        '--reconnect-delay',
        String(opts.reconnectDelayMs),
        ...(opts.extraArgs ?? []),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    ),
  );
  const events: SimulatorProcess['events'] = [];
  const welcomed = new Promise<void>((resolveWelcome, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const e = JSON.parse(line) as { event: string; data: unknown };
      events.push(e);
      if (e.event === 'welcome') resolveWelcome();
    });
    child.once('exit', (code) => reject(new Error(`simulator exited (${code}) before posd welcomed it`)));
  });
  await welcomed;
  const exited = new Promise<void>((r) => (child.exitCode === null ? child.once('exit', () => r()) : r()));
  return {
    child,
    events,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Reads a stopped or running daemon's database read-only (WAL: beside its writer). */
export function peek<T>(dir: string, fn: (db: Database.Database) => T): T {
  const db = new Database(join(dir, 'posd.db'), { readonly: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}
