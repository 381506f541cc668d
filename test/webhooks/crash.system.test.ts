import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { Webhook } from 'standardwebhooks';
import { Receiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';

const ROOT = resolve(import.meta.dirname, '../..');
const MAIN = join(ROOT, 'dist/posd/posd.js');

interface Running {
  child: ChildProcess;
  url: string;
  stderr: string;
}

/** Starts `posd serve` as its own process and resolves once it listens (its log line names the URL). */
/** Starts posd; a first start also waits for its key banner, printed on stderr after the listening line. */
function serve(dataDir: string, opts: { banner: boolean }): Promise<Running> {
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    env: {
      ...process.env,
      POSD_DATA: dataDir,
      POSD_HTTP_PORT: '0',
      POSD_LOG_FORMAT: 'json',
      POSD_WEBHOOKS_ALLOW_CIDRS: '127.0.0.1/32',
      // Short retries so the test spans seconds, not hours; the poll finds events written by this test process.
      POSD_WEBHOOKS_RETRY_DELAYS_MS: '0,4000,4000,4000,4000,4000',
      POSD_WEBHOOKS_BREAKER_FAILURES: '0',
      POSD_WEBHOOKS_POLL_MS: '100',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  return new Promise((resolvePromise, reject) => {
    const check = () => {
      const m = /"url":"(http:\/\/[^"]+)\/api".*posd listening/.exec(stdout);
      if (m && (!opts.banner || /sandbox (sbx_\S+)/.test(stderr)))
        resolvePromise({
          child,
          url: m[1],
          get stderr() {
            return stderr;
          },
        } as Running);
    };
    child.stderr!.on('data', (c) => {
      stderr += c;
      check();
    });
    child.stdout!.on('data', (c) => {
      stdout += c;
      check();
    });
    child.on('exit', (code) => reject(new Error(`posd exited (${code}): ${stderr}`)));
  });
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolvePromise) => {
    child.once('exit', () => resolvePromise());
    child.kill('SIGKILL');
  });
}

let dataDir: string;
const receiver = new Receiver([{ status: 500 }]);
let running: Running | undefined;

beforeAll(async () => {
  if (!existsSync(MAIN)) execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.json')]);
  dataDir = mkdtempSync(join(tmpdir(), 'posd-crash-'));
  await receiver.start();
}, 120_000);
afterAll(async () => {
  if (running && running.child.exitCode === null) await kill(running.child);
  await receiver.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('webhook delivery across a SIGKILL', () => {
  it('resumes after a restart and loses nothing', async () => {
    running = await serve(dataDir, { banner: true });
    const testKey = /test key\s+(sk_test_\S+)/.exec(running.stderr)![1];
    const sandboxId = /sandbox (sbx_\S+)/.exec(running.stderr)![1];
    const created = await request(`${running.url}/api/webhook_endpoints`, {
      method: 'POST',
      headers: { 'x-secret-key': testKey, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url }),
    });
    expect(created.statusCode).toBe(201);
    const { signingSecret } = (await created.body.json()) as { signingSecret: string };

    // Events written straight into the database by another process (as a CLI tool or an import
    // would); the daemon's poll finds them.
    const db = new Database(join(dataDir, 'posd.db'));
    db.pragma('busy_timeout = 5000');
    const insert = db.prepare(
      `INSERT INTO events (id, account_id, live_mode, type, object_id, payload, created_at) VALUES (?, ?, 0, 'intent.succeeded', NULL, ?, ?)`,
    );
    const ids = Array.from({ length: 10 }, (_, i) => `msg_crashtest${String(i).padStart(6, '0')}`);
    for (const id of ids.slice(0, 5)) insert.run(id, sandboxId, JSON.stringify({ id: `in_${id}` }), new Date().toISOString());

    // Each of the first five fails twice (first attempt and the immediate retry), then waits 4 s (a margin for a busy machine).
    // Killed between attempts: once all ten failures are committed and the retries are waiting.
    const waiting = db.prepare(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending' AND attempts = 2`);
    await until('the first failed attempts to be recorded', () => (waiting.get() as { n: number }).n === 5, 20_000);
    await kill(running.child);
    expect(receiver.received).toHaveLength(10);
    // Written while the daemon is down.
    for (const id of ids.slice(5)) insert.run(id, sandboxId, JSON.stringify({ id: `in_${id}` }), new Date().toISOString());
    db.close();
    receiver.replies = [{ status: 200 }];
    const before = receiver.received.length;

    running = await serve(dataDir, { banner: false });
    const okIds = () => new Set(receiver.received.slice(before).map((r) => r.headers['webhook-id']));
    await until('every event delivered after the restart', () => ids.every((id) => okIds().has(id)), 20_000);

    const wh = new Webhook(signingSecret);
    for (const got of receiver.received) {
      expect(ids).toContain(got.headers['webhook-id']);
      expect(wh.verify(got.body, got.headers as Record<string, string>)).toMatchObject({ event_type: 'intent.succeeded' });
    }
    // The events that failed before the kill carried the same webhook-id before and after it.
    for (const id of ids.slice(0, 5)) {
      expect(receiver.received.slice(0, before).filter((r) => r.headers['webhook-id'] === id).length).toBe(2);
    }
    running.child.kill('SIGTERM');
    await new Promise((r) => running!.child.once('exit', r));

    const check = new Database(join(dataDir, 'posd.db'), { readonly: true });
    const rows = check.prepare('SELECT event_id, status, attempts FROM webhook_deliveries ORDER BY event_id').all() as Array<{
      event_id: string;
      status: string;
      attempts: number;
    }>;
    check.close();
    expect(rows.map((r) => r.event_id)).toEqual(ids);
    expect(rows.every((r) => r.status === 'succeeded')).toBe(true);
    expect(rows.slice(0, 5).map((r) => r.attempts)).toEqual([3, 3, 3, 3, 3]);
    expect(rows.slice(5).map((r) => r.attempts)).toEqual([1, 1, 1, 1, 1]);
  }, 60_000);
});
