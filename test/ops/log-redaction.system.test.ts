import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { MAIN, runPosd, spawnDaemon, type DaemonProcess } from '../helpers/process.js';
import { PageClient } from '../helpers/page-client.js';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger.js';

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

async function setPassword(data: string, password: string): Promise<void> {
  const child = spawn(process.execPath, [MAIN, 'manager', 'set-password', '--data', data, '--password-stdin'], { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end(`${password}\n`);
  const [code] = await once(child, 'exit');
  expect(code).toBe(0);
}

/** Changes the last character of a key: a near miss must not be logged either (it is most of a key). */
const nearMiss = (key: string) => key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');

describe('secrets never reach the logs', () => {
  it('a full flow against a daemon process logs no key, password, session, CSRF or metrics token', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-redact-'));
    const data = join(dir, 'data');
    const metricsToken = 'metrics-token-Zq81xYw';
    daemon = spawnDaemon(['--data', data, '--port', '0'], { POSD_LOG_LEVEL: 'trace', POSD_OPS_METRICS_TOKEN: metricsToken });
    const [, api] = await daemon.waitFor(/API\s+(http:\/\/127\.0\.0\.1:\d+)\/api/);
    const [, testKey] = await daemon.waitFor(/test key\s+(sk_test_[0-9A-Za-z]+)/);
    const [, liveKey] = await daemon.waitFor(/live key\s+(sk_live_[0-9A-Za-z]+)/);
    await daemon.waitFor(/"msg":"posd listening"/);
    const secrets = new Set<string>([testKey, liveKey, metricsToken]);

    const accounts = JSON.parse((await runPosd(['accounts', 'list', '--data', data, '--json'])).stdout) as Array<{
      id: string;
      organization_id: string;
      environment: string;
    }>;
    const created = JSON.parse((await runPosd(['keys', 'create', '--data', data, '--account', accounts[0].id, '--env', 'live', '--json'])).stdout);
    const orgKey = JSON.parse(
      (await runPosd(['keys', 'create', '--data', data, '--organization', accounts[0].organization_id, '--env', 'test', '--json'])).stdout,
    );
    secrets.add(created.key).add(orgKey.key);
    const password = 'Manager-Pass-77x';
    const wrongPassword = 'Wrong-Guess-55y';
    secrets.add(password).add(wrongPassword);
    await setPassword(data, password);

    const call = async (path: string, headers: Record<string, string>, init: { method?: 'GET' | 'POST'; body?: string } = {}) => {
      const res = await request(`${api}${path}`, { method: init.method ?? 'GET', headers, body: init.body });
      return { status: res.statusCode, text: await res.body.text() };
    };
    const sandbox = accounts.find((a) => a.environment === 'sandbox')!.id;
    for (const key of [testKey, liveKey, created.key, orgKey.key]) {
      const scope: Record<string, string> = key === orgKey.key ? { 'x-account-id': sandbox } : {};
      expect((await call('/api/test', { 'x-secret-key': key, ...scope })).status).toBe(200);
      const wrong = nearMiss(key);
      secrets.add(wrong);
      expect((await call('/api/test', { 'x-secret-key': wrong })).status).toBe(401);
      expect((await call('/api/test', { authorization: `Bearer ${key}` })).status).toBe(401);
    }
    // Keys in odd places: a query string, a body, a JSON field that fails validation.
    expect((await call(`/api/test?key=${testKey}`, {})).status).toBe(401);
    expect(
      (await call('/api/test', { 'x-secret-key': testKey, 'content-type': 'application/json' }, { method: 'POST', body: `{"key": "${liveKey}", ` })).status,
    ).toBe(400);
    // An organization key without the account it acts on (it reads every account: spec 5 rule 5), and a revoked key.
    expect((await call('/api/test', { 'x-secret-key': orgKey.key })).status).toBe(200);
    expect((await runPosd(['keys', 'revoke', '--data', data, created.prefix])).code).toBe(0);
    expect((await call('/api/test', { 'x-secret-key': created.key })).status).toBe(401);

    // The status page: a wrong and a right password, the session cookie and CSRF token, logout.
    const page = new PageClient(api);
    expect((await page.login(wrongPassword)).status).toBe(401);
    expect((await page.login(password)).status).toBe(303);
    secrets.add(page.cookies.get('posd_session')!);
    const status = await page.get('/');
    const csrf = PageClient.csrf(status.text);
    secrets.add(csrf);
    expect((await page.post('/logout', { _csrf: `x${csrf}` })).status).toBe(403);
    expect((await page.post('/logout', { _csrf: csrf })).status).toBe(303);

    expect((await call('/metrics', { authorization: `Bearer ${metricsToken}x` })).status).toBe(401);
    expect((await call('/metrics', { authorization: `Bearer ${metricsToken}` })).status).toBe(200);

    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });

    const logs = daemon.stdout();
    // The log really did record this flow (a grep over an empty log proves nothing).
    expect(logs).toContain('"msg":"manager login failed"');
    expect(logs).toContain('"msg":"manager logged in"');
    expect(logs).toContain('"msg":"posd stopped"');
    for (const secret of secrets) expect(logs, `log holds ${secret.slice(0, 12)}…`).not.toContain(secret);
    // stderr holds the one-time banner with the first two keys, once each, and no other secret.
    const stderr = daemon.stderr();
    for (const secret of secrets) {
      const times = stderr.split(secret).length - 1;
      expect(times, `stderr shows ${secret.slice(0, 12)}… ${times} times`).toBe(secret === testKey ? 2 : secret === liveKey ? 1 : 0);
    }
  });
});

describe('logger redaction paths', () => {
  it('censors headers and fields that hold secrets wherever a module logs them', () => {
    let out = '';
    const sink = new Writable({
      write(chunk, _enc, done) {
        out += chunk;
        done();
      },
    });
    const log = createLogger({ log: { level: 'info', format: 'json' } }, sink as never);
    log.info({ req: { headers: { 'x-secret-key': 'sk_live_AAA', authorization: 'Bearer BBB', cookie: 'posd_session=CCC' } } }, 'r');
    log.info({ headers: { authorization: 'Bearer DDD', cookie: 'posd_session=EEE' } }, 'h');
    log.info({ form: { password: 'FFF', _csrf: 'GGG' }, ops: { metrics_token: 'HHH' }, user: { session: 'III', key: 'sk_test_JJJ' } }, 'f');
    for (const s of ['AAA', 'BBB', 'CCC', 'DDD', 'EEE', 'FFF', 'GGG', 'HHH', 'III', 'JJJ']) expect(out).not.toContain(s);
    expect(out.match(/\[redacted\]/g)?.length).toBe(10);
  });
});
