import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runPosd, spawnDaemon, type DaemonProcess } from '../helpers/process.js';
import { Receiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';

// Issue 16: "a backup cannot rebuild a box": webhook-secrets.key was not in it, and on a fresh box every
// delivery then failed with an error labelled as a network problem. Separate processes, real folders.

const dirs: string[] = [];
const daemons: DaemonProcess[] = [];
const receiver = new Receiver([{ status: 200 }]);

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'posd-fullbackup-'));
  dirs.push(d);
  return d;
}

async function serve(args: string[]): Promise<{ d: DaemonProcess; url: string }> {
  const d = spawnDaemon(['--port', '0', ...args]);
  daemons.push(d);
  const [, url] = await d.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)\/api"/, 90_000);
  return { d, url };
}

async function stop(d: DaemonProcess): Promise<void> {
  d.child.kill('SIGTERM');
  expect(await d.exited).toEqual({ code: 0, signal: null });
}

/** An event written by another process, as an import would: the daemon's poll finds it. */
function insertEvent(data: string, accountId: string, id: string): void {
  const db = new Database(join(data, 'posd.db'));
  db.pragma('busy_timeout = 5000');
  db.prepare(`INSERT INTO events (id, account_id, live_mode, type, object_id, payload, created_at) VALUES (?, ?, 0, 'intent.succeeded', NULL, ?, ?)`).run(
    id,
    accountId,
    JSON.stringify({ id: `in_${id}` }),
    new Date().toISOString(),
  );
  db.close();
}

async function doctor(data: string, config: string): Promise<Map<string, { ok: boolean; detail: string; fix?: string }>> {
  const r = await runPosd(['doctor', '--data', data, '--config', config, '--json']);
  const out = JSON.parse(r.stdout) as { checks: Array<{ name: string; ok: boolean; detail: string; fix?: string }> };
  return new Map(out.checks.map((c) => [c.name, c]));
}

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
});
afterEach(async () => {
  for (const d of daemons.splice(0)) {
    if (d.child.exitCode === null && d.child.signalCode === null) {
      d.child.kill('SIGKILL');
      await d.exited;
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('a complete backup', () => {
  it(
    'rebuilds a fresh box whose webhooks sign as before; a key that does not match is named by doctor and in the delivery error',
    { timeout: 600_000 },
    async () => {
      const root = dir();
      const boxA = join(root, 'a');
      // The box's settings: a receiver on this machine is allowed, deliveries polled often.
      const settingsA = join(root, 'a.json');
      writeFileSync(settingsA, JSON.stringify({ webhooks: { allow_cidrs: ['127.0.0.1/32'], poll_ms: 100 }, backup: { keep: 3 } }));
      const inst = JSON.parse((await runPosd(['init', '--data', boxA, '--config', settingsA, '--json'])).stdout) as {
        sandbox_id: string;
        keys: { test: string };
      };
      const a = await serve(['--data', boxA, '--config', settingsA]);
      const created = await request(`${a.url}/api/webhook_endpoints`, {
        method: 'POST',
        headers: { 'x-secret-key': inst.keys.test, 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url }),
      });
      expect(created.statusCode).toBe(201);
      const { signingSecret } = (await created.body.json()) as { signingSecret: string };

      // Without a passphrase the backup says what it leaves out, and doctor fails on it.
      const plain = join(root, 'plain.db');
      const p = await runPosd(['backup', '--data', boxA, '--config', settingsA, '--to', plain]);
      expect(p.code).toBe(0);
      expect(p.stdout).toMatch(
        /holds: database, settings\n {2}left out: the webhook signing key [0-9a-f]{12}: a box restored from it cannot sign webhooks as before; set backup\.passphrase/,
      );
      const lastBackup = (await doctor(boxA, settingsA)).get('last backup')!;
      expect(lastBackup.ok).toBe(false);
      expect(lastBackup.detail).toMatch(/left out the webhook signing key/);

      // With one, taken beside the running daemon, it holds everything.
      const passFile = join(root, 'pass.txt');
      writeFileSync(passFile, 'correct horse battery staple\n');
      const full = join(root, 'full.db');
      const b = await runPosd(['backup', '--data', boxA, '--config', settingsA, '--to', full, '--passphrase-file', passFile]);
      expect(b.stderr).toBe('');
      expect(b.code).toBe(0);
      expect(b.stdout).toMatch(/holds: database, settings, webhook signing key [0-9a-f]{12} \(sealed\)\n$/);
      expect((await doctor(boxA, settingsA)).get('last backup')!.ok).toBe(true);
      // The key is not readable from the file without the passphrase.
      const keyA = readFileSync(join(boxA, 'webhook-secrets.key'), 'utf8');
      expect(readFileSync(full).includes(Buffer.from(keyA.trim()))).toBe(false);
      await stop(a.d);

      // A fresh box: nothing but the backup file and the passphrase.
      const boxC = join(root, 'c');
      const settingsC = join(root, 'etc', 'posd.json');
      const noPass = await runPosd(['restore', full, '--data', boxC, '--config', settingsC]);
      expect(noPass.code).toBe(2);
      expect(noPass.stderr).toMatch(/sealed under a passphrase: give it with --passphrase-file FILE or POSD_BACKUP_PASSPHRASE .*nothing was changed/);
      const wrongFile = join(root, 'wrong.txt');
      writeFileSync(wrongFile, 'wrong\n');
      const wrong = await runPosd(['restore', full, '--data', boxC, '--config', settingsC, '--passphrase-file', wrongFile]);
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toMatch(/^posd: wrong passphrase for .*full\.db; nothing was changed\n$/);
      expect(existsSync(join(boxC, 'posd.db'))).toBe(false);
      expect(existsSync(settingsC)).toBe(false);

      // The passphrase from the environment, as the service would have it.
      const r = await runPosd(['restore', full, '--data', boxC, '--config', settingsC], { POSD_BACKUP_PASSPHRASE: 'correct horse battery staple' });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/webhook signing key [0-9a-f]{12}: restored as .*webhook-secrets\.key\n/);
      expect(r.stdout).toContain(`settings: written to ${settingsC}`);
      expect(r.stdout).not.toMatch(/WARNING/);
      expect(readFileSync(join(boxC, 'webhook-secrets.key'), 'utf8')).toBe(keyA);
      expect(JSON.parse(readFileSync(settingsC, 'utf8'))).toEqual({ webhooks: { allow_cidrs: ['127.0.0.1/32'], poll_ms: 100 }, backup: { keep: 3 } });
      const restoredDb = new Database(join(boxC, 'posd.db'), { readonly: true });
      // The bundle does not stay in the live database.
      expect(restoredDb.prepare("SELECT name FROM sqlite_master WHERE name = 'posd_backup'").get()).toBeUndefined();
      restoredDb.close();
      expect((await doctor(boxC, settingsC)).get('webhook signing key')).toMatchObject({
        ok: true,
        detail: expect.stringMatching(/opens the endpoint secrets/),
      });

      // A copy of the restored box with another key file: doctor names the key, and so does the delivery.
      const boxD = join(root, 'd');
      cpSync(boxC, boxD, { recursive: true });
      writeFileSync(join(boxD, 'webhook-secrets.key'), `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
      const keyCheck = (await doctor(boxD, settingsC)).get('webhook signing key')!;
      expect(keyCheck.ok).toBe(false);
      expect(keyCheck.detail).toMatch(
        new RegExp(`${join(boxD, 'webhook-secrets.key').replace(/[.]/g, '\\.')} \\(key [0-9a-f]{12}\\) does not match the database`),
      );

      // The restored box signs as before: the receiver verifies with the secret shown at creation on box A.
      const c = await serve(['--data', boxC, '--config', settingsC]);
      insertEvent(boxC, inst.sandbox_id, 'msg_restored0000001');
      const got = await until(
        'the delivery from the restored box',
        () => receiver.received.find((x) => x.headers['webhook-id'] === 'msg_restored0000001'),
        60_000,
      );
      expect(new Webhook(signingSecret).verify(got.body, got.headers as Record<string, string>)).toMatchObject({ event_type: 'intent.succeeded' });
      await stop(c.d);

      const dd = await serve(['--data', boxD, '--config', settingsC]);
      insertEvent(boxD, inst.sandbox_id, 'msg_mismatched00001');
      const db = new Database(join(boxD, 'posd.db'), { readonly: true });
      const lastError = await until(
        'the failed delivery',
        () =>
          (db.prepare("SELECT last_error FROM webhook_deliveries WHERE event_id = 'msg_mismatched00001' AND last_error IS NOT NULL").pluck().get() as
            | string
            | undefined) ?? undefined,
        60_000,
      );
      db.close();
      expect(lastError).toMatch(/^secret_key_mismatch: .*webhook-secrets\.key \(key [0-9a-f]{12}\) does not match this database/);
      expect(receiver.received.some((x) => x.headers['webhook-id'] === 'msg_mismatched00001')).toBe(false);
      await stop(dd.d);
    },
  );
});
