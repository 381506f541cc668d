/**
 * `posd managers add|list|token|remove` from the shell (issue 36), as a manager runs them on a box:
 * a manager added with a password of their own (stored as argon2id), listed, given a token with
 * which the running daemon's API takes an offline-policy change audited under their name; removed,
 * the token stops working at once and the audit keeps the name. Separate processes, a real folder.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { afterAll, expect, it } from 'vitest';
import { MAIN, killStarted, posd, posdExit, removeTempDirs, requireBuild, startDaemonProcess, tempDir } from '../sync/e2e/processes.js';

afterAll(async () => {
  await killStarted();
  removeTempDirs();
});

/** `posd <args>` with `input` on its standard input; resolves with its exit code and output. */
function posdWithInput(args: string[], input: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, POSD_LOG_LEVEL: 'warn' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

it('adds, lists, gives a token to and removes a named manager; the API audits their change under their name', async () => {
  requireBuild();
  const data = tempDir('posd-managers-');
  const inst = await posd(['init', '--json', '--data', data]);
  const name = 'Ana López';

  const added = await posdWithInput(['managers', 'add', name, '--password-stdin', '--json', '--data', data], 'a long password 1\n');
  expect(added.code, added.stderr).toBe(0);
  expect(JSON.parse(added.stdout)).toMatchObject({ name });
  const short = await posdWithInput(['managers', 'add', 'Luis', '--password-stdin', '--data', data], 'short\n');
  expect(short.code).not.toBe(0);
  expect(short.stderr).toContain('at least');
  const again = await posdWithInput(['managers', 'add', name, '--password-stdin', '--data', data], 'another long password\n');
  expect(again.stderr).toContain('exists already');
  expect(await posd(['managers', 'list', '--json', '--data', data])).toEqual([expect.objectContaining({ name, has_token: false })]);
  const hash = new Database(join(data, 'posd.db'), { readonly: true });
  expect((hash.prepare('SELECT password_hash FROM managers').get() as { password_hash: string }).password_hash).toMatch(/^argon2id\$/);
  hash.close();

  const token = ((await posd(['managers', 'token', name, '--data', data])) as string).trim();
  expect(await posd(['managers', 'list', '--json', '--data', data])).toEqual([expect.objectContaining({ name, has_token: true })]);

  const daemon = await startDaemonProcess(data, { role: 'store', limits: { per_key_per_second: 100_000 } });
  const api = async (method: 'GET' | 'PATCH', path: string, headers: Record<string, string> = {}, body?: unknown) => {
    const res = await request(`${daemon.url}/api${path}`, {
      method,
      headers: { 'x-secret-key': inst.keys.live, ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.statusCode, body: (await res.body.json()) as any };
  };
  const change = { max_count: 12, reason: 'two tills tonight' };
  expect((await api('PATCH', '/offline_policy', {}, change)).status).toBe(403);
  const ok = await api('PATCH', '/offline_policy', { 'x-manager-token': token }, change);
  expect(ok.status).toBe(200);
  expect((await api('GET', '/offline_audit')).body).toEqual([expect.objectContaining({ action: 'caps_set', actor: name, reason: 'two tills tonight' })]);

  // Removed: the token stops at once (the daemon reads the managers on each request); the audit keeps the name.
  expect((await posdExit(['managers', 'remove', name, '--data', data])).code).toBe(0);
  expect(await posd(['managers', 'list', '--json', '--data', data])).toEqual([]);
  const after = await api('PATCH', '/offline_policy', { 'x-manager-token': token }, { ...change, max_count: 50 });
  expect(after.status).toBe(403);
  expect(after.body.code).toBe('manager_credential_required');
  expect((await api('GET', '/offline_audit')).body.map((a: { actor: string }) => a.actor)).toEqual([name]);
  await daemon.kill('SIGTERM');
}, 120_000);

it('takes a shell override only under a named manager once the box has managers', async () => {
  requireBuild();
  const data = tempDir('posd-managers-shell-');
  await posd(['init', '--json', '--data', data]);
  const accounts = (await posd(['accounts', 'list', '--json', '--data', data])) as Array<{ id: string }>;
  const allow = (by?: string) =>
    posdExit([
      'payments',
      'offline',
      'allow',
      '--account',
      accounts[0].id,
      '--until',
      new Date(Date.now() + 3_600_000).toISOString(),
      '--reason',
      'uplink down',
      ...(by ? ['--by', by] : []),
      '--data',
      data,
    ]);
  expect((await posdWithInput(['managers', 'add', 'Ana', '--password-stdin', '--data', data], 'a long password 1\n')).code).toBe(0);
  const anonymous = await allow();
  expect(anonymous.code).not.toBe(0);
  expect(anonymous.stderr).toContain('--by <manager> is required');
  const stranger = await allow('maria');
  expect(stranger.code).not.toBe(0);
  expect(stranger.stderr).toContain('no manager of that name');
  expect((await allow('Ana')).code).toBe(0);
  const audit = (await posd(['payments', 'offline', 'audit', '--account', accounts[0].id, '--json', '--data', data])) as Array<{ actor: string }>;
  expect(audit.map((a) => a.actor)).toEqual(['Ana']);
}, 120_000);
