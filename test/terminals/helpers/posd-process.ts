/** posd as a separate process (`node dist/posd/posd.js serve`, the built command), for crash and restart tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'undici';
import { assertBuilt, MAIN } from '../../helpers/process.js';
export { freePort } from '../../helpers/free-port.js';

export interface PosdProcess {
  proc: ChildProcess;
  url: string;
  /** The sandbox test key, shown on the first start only. */
  testKey?: string;
  stderr: () => string;
}

export async function startPosd(env: Record<string, string>): Promise<PosdProcess> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npm test runs the build before vitest)`);
  assertBuilt();
  const proc = spawn(process.execPath, [MAIN, 'serve'], {
    env: { ...process.env, POSD_LOG_LEVEL: 'warn', POSD_LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  proc.stdout!.resume();
  const url = `http://127.0.0.1:${env.POSD_HTTP_PORT}`;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`posd exited (${proc.exitCode}): ${err}`);
    try {
      const res = await request(`${url}/healthz`);
      await res.body.text();
      if (res.statusCode === 200) break;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const testKey = /test key\s+(sk_test_\w+)/.exec(err)?.[1];
  return { proc, url, testKey, stderr: () => err };
}

export function kill9(p: PosdProcess): Promise<void> {
  return new Promise((resolve) => {
    if (p.proc.exitCode !== null || p.proc.signalCode !== null) return resolve();
    p.proc.once('exit', () => resolve());
    p.proc.kill('SIGKILL');
  });
}

export async function call(url: string, key: string, method: string, path: string, body?: unknown) {
  const res = await request(`${url}/api${path}`, {
    method: method as 'GET',
    headers: { 'x-secret-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}
