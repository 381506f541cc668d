import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

export interface BenchResult {
  scenario: string;
  metrics: Record<string, number>;
  baseline: Record<string, number>;
  /** posd's throughput over the baseline's, measured in the same run. */
  ratio: number;
  target: string;
}

/** The built `posd` command (src/posd.ts bundled by scripts/bundle.mjs), as package.json's `bin` and bin/posd run it. */
export const MAIN = fileURLToPath(new URL('../posd/posd.js', import.meta.url));

export interface BenchDaemon {
  url: string;
  dataDir: string;
  keys: { live: string; test: string };
  ids: { account_id: string; sandbox_id: string; organization_id: string };
  child: ChildProcess;
  stop(): Promise<void>;
}

function waitForOutput(child: ChildProcess, re: RegExp, timeoutMs = 90_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re}: ${text}`)), timeoutMs);
    const onData = (d: Buffer) => {
      text += d;
      const m = text.match(re);
      if (m) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.stderr?.off('data', onData);
        resolve(m);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited ${code} before ${re}: ${text}`)));
  });
}

/**
 * The flush-latency harness: `command` run so that every `fsync`/`fdatasync` it makes (any thread)
 * returns `flushDelayMs` later, as on a store box's eMMC, SD card or cheap SSD, where this machine's
 * disk flushes in about 55 µs. strace's fault injection does it without touching the program
 * (`--seccomp-bpf` stops only at those two calls, so nothing else slows down). At 0 the command
 * runs as it is. `apt-get install strace` where it is missing (docs/operations.md, flush latency).
 */
export function underFlushDelay(flushDelayMs: number, command: string[]): string[] {
  if (flushDelayMs <= 0) return command;
  if (!existsSync('/usr/bin/strace')) throw new Error('a flush delay needs strace (apt-get install strace)');
  const us = Math.round(flushDelayMs * 1000);
  return [
    '/usr/bin/strace',
    '-f',
    '-qq',
    '--seccomp-bpf',
    '-o',
    '/dev/null',
    '-e',
    'trace=fsync,fdatasync',
    '-e',
    `inject=fsync,fdatasync:delay_exit=${us}`,
    ...command,
  ];
}

/**
 * SIGTERM to what `spawnDelayed` started: under strace, to the program it traces (strace itself
 * blocks fatal signals when it writes to a file, and exits once its tracee has).
 */
function stopTraced(child: ChildProcess): void {
  const traced = child.spawnfile === '/usr/bin/strace';
  const pid = traced ? Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0]) : child.pid;
  if (pid) process.kill(pid, 'SIGTERM');
}

function spawnDelayed(flushDelayMs: number, args: string[], options: Parameters<typeof spawn>[2]): ChildProcess {
  const [cmd, ...rest] = underFlushDelay(flushDelayMs, [process.execPath, ...args]);
  return spawn(cmd, rest, options);
}

/** Makes a data directory with `posd init` (keys and accounts), for `startBenchDaemon({ dataDir })`. */
export async function initBenchData(): Promise<{ dataDir: string; keys: { live: string; test: string }; ids: BenchDaemon['ids'] }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'posd-bench-'));
  const init = spawn(process.execPath, [MAIN, 'init', '--data', dataDir, '--json'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  init.stdout.on('data', (d) => (out += d));
  await new Promise((r) => init.once('exit', r));
  const inst = JSON.parse(out);
  return { dataDir, keys: inst.keys, ids: inst };
}

/**
 * `posd init` then `posd serve` in its own process, as on a store box, with limits raised for load.
 * `flushDelayMs` runs it under the flush-latency harness; `data` reuses a directory made before
 * (and prepared at full speed); `keep` leaves it in place at stop for the next run.
 */
export async function startBenchDaemon(
  env: Record<string, string> = {},
  opts: { flushDelayMs?: number; data?: Awaited<ReturnType<typeof initBenchData>>; keep?: boolean } = {},
): Promise<BenchDaemon> {
  const { dataDir, keys, ids } = opts.data ?? (await initBenchData());
  const inst = { keys, ...ids };
  const child = spawnDelayed(opts.flushDelayMs ?? 0, [MAIN, 'serve', '--data', dataDir, '--port', '0'], {
    env: { ...daemonEnv(), POSD_LOG_LEVEL: 'info', POSD_LOG_FORMAT: 'json', POSD_LIMITS_PER_KEY_PER_SECOND: '10000000', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.resume();
  child.stderr!.resume();
  // Request logging is off, so info adds only start and stop lines; the start line names the port.
  // https under `tls.mode: on` (bench/tls.ts).
  const [, scheme, port] = await waitForOutput(child, /"url":"(https?):\/\/127\.0\.0\.1:(\d+)\/api"/).catch((err) => {
    if (child.exitCode === null) stopTraced(child);
    throw err;
  });
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    dataDir,
    keys: inst.keys,
    ids: inst,
    child,
    async stop() {
      stopTraced(child);
      await new Promise((r) => child.once('exit', r));
      if (!opts.keep) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Starts a baseline server script (compiled, in bench/baselines) in its own process; it prints its port. */
export async function startBaseline(script: string, env: Record<string, string> = {}, flushDelayMs = 0): Promise<{ url: string; stop(): Promise<void> }> {
  const path = fileURLToPath(new URL(`./baselines/${script}.js`, import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'posd-baseline-'));
  const child = spawnDelayed(flushDelayMs, [path], { env: { ...process.env, ...env, BASELINE_DIR: dir }, stdio: ['ignore', 'pipe', 'inherit'] });
  const [, port] = await waitForOutput(child, /port (\d+)/);
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      stopTraced(child);
      await new Promise((r) => child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface LoadResult {
  rps: number;
  /** Requests answered in the run: 0 when the first one outlasted it (its latency then reads 0). */
  total: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export async function load(opts: {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections?: number;
  durationSeconds?: number;
  /** Gives each request its own body (a new e-mail, the next prepared checkout). */
  nextBody?: () => string;
  /**
   * Seconds of the same load before the measured run, not counted: a server's one-time costs (the
   * first response compiling its serializer, the JIT) stay out of a steady-state ratio. Give it to
   * both sides of a comparison.
   */
  warmupSeconds?: number;
}): Promise<LoadResult> {
  const nextBody = opts.nextBody;
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    body: opts.body,
    connections: opts.connections ?? 50,
    duration: opts.durationSeconds ?? Number(process.env.POSD_BENCH_SECONDS ?? 5),
    ...(opts.warmupSeconds ? { warmup: { connections: opts.connections ?? 50, duration: opts.warmupSeconds } } : {}),
    ...(nextBody ? { requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, body: nextBody() }) }] } : {}),
  });
  return {
    rps: result.requests.average,
    total: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

/** The bench's environment without its own POSD_BENCH_* knobs, which the daemon would warn of as unknown settings. */
function daemonEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('POSD_BENCH_')));
}
