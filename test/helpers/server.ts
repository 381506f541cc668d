import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import pino from 'pino';
import { validateConfig, type Config } from '../../src/config.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import type { Installation } from '../../src/accounts/service.js';
import type { Clock } from '../../src/clock.js';
import type { PosdModule } from '../../src/api/module.js';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface TestServer {
  daemon: Daemon;
  url: string;
  dataDir: string;
  installation: Installation;
  config: Config;
  /** Calls the API under /api with a key (the sandbox test key by default). */
  api<T = any>(
    method: string,
    path: string,
    opts?: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>;
  stop(): Promise<void>;
}

/**
 * The test servers started and not yet stopped in this worker: test/helpers/leftovers.ts stops and
 * removes what a file left running, and fails that file.
 */
export const runningServers = new Set<TestServer>();

/** A real daemon on port 0 with a real SQLite file in a fresh temp folder. */
export async function startTestServer(
  opts: { config?: Record<string, unknown>; clock?: Clock; modules?: readonly PosdModule[]; dataDir?: string; log?: pino.Logger } = {},
): Promise<TestServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'posd-test-'));
  const config = validateConfig({
    data_dir: dataDir,
    http: { port: 0, host: '127.0.0.1' },
    log: { level: 'silent' },
    // Tests fire requests faster than a till; the burst limit has its own tests that set it.
    limits: { per_key_per_second: 100_000 },
    ...opts.config,
  });
  let installation: Installation | undefined;
  const daemon = await startDaemon({
    config,
    clock: opts.clock,
    modules: opts.modules,
    log: opts.log ?? pino({ level: process.env.POSD_TEST_LOG ?? 'silent' }),
    onInstalled: (inst) => {
      installation = inst;
    },
  });
  if (!installation) throw new Error('test server expected a fresh installation');
  const inst = installation;
  const url = daemon.url;
  let trusting: Agent | undefined;
  const server: TestServer = {
    daemon,
    url,
    dataDir,
    installation: inst,
    config,
    async api(method, path, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      const key = o.key === undefined ? inst.keys.test : o.key;
      if (key !== null) headers['x-secret-key'] = key;
      let body: string | undefined = o.rawBody;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] ??= 'application/json';
      }
      // Under TLS, the client trusts the box CA and nothing else, as a till given `posd tls ca`'s file.
      trusting ??= url.startsWith('https://') ? new Agent({ connect: { ca: readFileSync(join(dataDir, 'tls', 'ca.pem')) } }) : undefined;
      const res = await request(`${url}/api${path}`, { method: method as any, headers, body, dispatcher: trusting });
      const text = await res.body.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON: keep the text */
      }
      return { status: res.statusCode, body: parsed as any, headers: res.headers as any, text };
    },
    async stop() {
      runningServers.delete(server);
      await trusting?.close();
      await daemon.stop();
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  runningServers.add(server);
  return server;
}
