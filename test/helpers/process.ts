import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';

/** The built `posd` command (src/posd.ts bundled by scripts/bundle.mjs): the file package.json's `bin`, `npm start`, bin/posd and systemd run. */
export const MAIN = fileURLToPath(new URL('../../dist/posd/posd.js', import.meta.url));
/**
 * The same command as tsc's output, one file per module, for the tests that preload a module into it
 * (test/helpers/failing-worker.ts adds to dist/src/modules/index.js's list, which the bundle does not share).
 */
export const UNBUNDLED_MAIN = fileURLToPath(new URL('../../dist/src/posd.js', import.meta.url));

let built = false;
/**
 * The built posd makes new databases from dist/posd/baseline.sql (tsc's output from
 * dist/src/db/baseline.sql), which `npm run build` copies and `tsc` alone does not: a missing or older
 * copy would fail every spawned daemon far from the cause, so say it here.
 */
export function assertBuilt(): void {
  if (built) return;
  const source = new URL('../../src/db/baseline.sql', import.meta.url);
  for (const copy of ['../../dist/src/db/baseline.sql', '../../dist/posd/baseline.sql']) {
    const url = new URL(copy, import.meta.url);
    if (!existsSync(url) || readFileSync(url, 'utf8') !== readFileSync(source, 'utf8')) {
      throw new Error(`${copy.slice(6)} is missing or differs from src/db/baseline.sql: run npm run build (tsc alone does not copy it)`);
    }
  }
  built = true;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built `posd` command to completion. */
export async function runPosd(args: string[], env: Record<string, string> = {}, stdin?: string): Promise<RunResult> {
  assertBuilt();
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  if (stdin !== undefined) child.stdin!.end(stdin);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

export interface DaemonProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `re` in stdout+stderr (lines arrive as they are written). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `posd serve` as its own process, the way a store box runs it. */
export function spawnDaemon(args: string[], env: Record<string, string> = {}, main = MAIN): DaemonProcess {
  assertBuilt();
  const child = spawn(process.execPath, [main, 'serve', ...args], {
    env: { ...process.env, POSD_LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters: Array<() => void> = [];
  const poke = () => waiters.splice(0).forEach((w) => w());
  child.stdout!.on('data', (d) => {
    out += d;
    poke();
  });
  child.stderr!.on('data', (d) => {
    err += d;
    poke();
  });
  // 'close', not 'exit': it comes once stdout and stderr are drained too, so a test that reads them
  // after `exited` sees every line the process wrote.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => {
      poke();
      resolve({ code, signal });
    }),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(re, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re}\nstdout:\n${out}\nstderr:\n${err}`)), timeoutMs);
        const check = () => {
          const m = (out + err).match(re);
          if (m) {
            clearTimeout(timer);
            resolve(m);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            reject(new Error(`posd exited (${child.exitCode ?? child.signalCode}) before ${re}\nstdout:\n${out}\nstderr:\n${err}`));
          } else waiters.push(check);
        };
        check();
      });
    },
  };
}
