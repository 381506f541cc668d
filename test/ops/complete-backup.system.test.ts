import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runPosd, spawnDaemon, type DaemonProcess } from '../helpers/process.js';
import { makeRecoveryPair } from '../../src/system/recovery-key.js';
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
        recovery_key: string;
        recovery_key_id: string;
      };
      const recoveryFile = join(root, 'recovery.txt');
      writeFileSync(recoveryFile, `${inst.recovery_key}\n`);
      const a = await serve(['--data', boxA, '--config', settingsA]);
      const created = await request(`${a.url}/api/webhook_endpoints`, {
        method: 'POST',
        headers: { 'x-secret-key': inst.keys.test, 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url }),
      });
      expect(created.statusCode).toBe(201);
      const { signingSecret } = (await created.body.json()) as { signingSecret: string };

      // With no passphrase set anywhere, taken beside the running daemon, it holds everything: sealed to the recovery key.
      const full = join(root, 'full.db');
      const b = await runPosd(['backup', '--data', boxA, '--config', settingsA, '--to', full]);
      expect(b.stderr).toBe('');
      expect(b.code).toBe(0);
      expect(b.stdout).toMatch(
        new RegExp(`holds: database, settings, webhook signing key [0-9a-f]{12} \\(secrets sealed to recovery key ${inst.recovery_key_id}\\)\n$`),
      );
      const checks = await doctor(boxA, settingsA);
      expect(checks.get('last backup')!.ok).toBe(true);
      expect(checks.get('recovery key')).toMatchObject({ ok: true, detail: `backups are sealed to recovery key ${inst.recovery_key_id}` });
      // The key is not readable from the file without the recovery key.
      const keyA = readFileSync(join(boxA, 'webhook-secrets.key'), 'utf8');
      expect(readFileSync(full).includes(Buffer.from(keyA.trim()))).toBe(false);
      await stop(a.d);

      // A fresh box: nothing but the backup file and the recovery key written down at init.
      const boxC = join(root, 'c');
      const settingsC = join(root, 'etc', 'posd.json');
      const noKey = await runPosd(['restore', full, '--data', boxC, '--config', settingsC]);
      expect(noKey.code).toBe(2);
      expect(noKey.stderr).toMatch(
        new RegExp(`sealed to recovery key ${inst.recovery_key_id}: give the key posd init showed with --recovery-key-file FILE .*nothing was changed`),
      );
      const wrongFile = join(root, 'wrong.txt');
      writeFileSync(wrongFile, `${makeRecoveryPair().recoveryKey}\n`);
      const wrong = await runPosd(['restore', full, '--data', boxC, '--config', settingsC, '--recovery-key-file', wrongFile]);
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toMatch(
        new RegExp(
          `^posd: the recovery key given \\(rk-[0-9a-f]{12}\\) is not the one this backup was sealed to \\(${inst.recovery_key_id}\\): .*full\\.db; nothing was changed\n$`,
        ),
      );
      const typo = join(root, 'typo.txt');
      const groups = inst.recovery_key.split('-');
      groups[4] = `${groups[4][0] === 'A' ? 'B' : 'A'}${groups[4].slice(1)}`;
      writeFileSync(typo, `${groups.join('-')}\n`);
      const mistyped = await runPosd(['restore', full, '--data', boxC, '--config', settingsC, '--recovery-key-file', typo]);
      expect(mistyped.stderr).toMatch(/does not check out: a character is mistyped/);
      expect(existsSync(join(boxC, 'posd.db'))).toBe(false);
      expect(existsSync(settingsC)).toBe(false);

      // The recovery key on standard input, as a manager would paste it.
      const r = await runPosd(['restore', full, '--data', boxC, '--config', settingsC, '--recovery-key-file', '-'], {}, `${inst.recovery_key}\n`);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/webhook signing key [0-9a-f]{12}: restored as .*webhook-secrets\.key\n/);
      expect(r.stdout).toContain(`settings: written to ${settingsC}`);
      expect(r.stdout).toContain(`recovery key: ${inst.recovery_key_id}: later backups are sealed to it`);
      expect(r.stdout).not.toMatch(/WARNING/);
      expect(readFileSync(join(boxC, 'webhook-secrets.key'), 'utf8')).toBe(keyA);
      expect(readFileSync(join(boxC, 'recovery-key.pub'), 'utf8')).toBe(readFileSync(join(boxA, 'recovery-key.pub'), 'utf8'));
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

  it(
    'a passphrase setup keeps working beside the recovery key, and the passphrase is never written back in clear; a new pair leaves old backups to the old key',
    { timeout: 300_000 },
    async () => {
      const root = dir();
      const boxA = join(root, 'a');
      const settingsA = join(root, 'a.json');
      writeFileSync(settingsA, JSON.stringify({ backup: { passphrase: 'correct horse battery staple', keep: 2 } }));
      const inst = JSON.parse((await runPosd(['init', '--data', boxA, '--config', settingsA, '--json'])).stdout) as {
        recovery_key: string;
        recovery_key_id: string;
      };
      const file = join(root, 'both.db');
      const b = await runPosd(['backup', '--data', boxA, '--config', settingsA, '--to', file]);
      expect(b.code).toBe(0);
      expect(b.stdout).toContain(`(secrets sealed to recovery key ${inst.recovery_key_id} and backup.passphrase)`);
      expect(readFileSync(file).includes(Buffer.from('correct horse'))).toBe(false);

      // Restored with the passphrase alone, as a service environment gives it.
      const boxB = join(root, 'b');
      const settingsB = join(root, 'etc-b', 'posd.json');
      const r = await runPosd(['restore', file, '--data', boxB, '--config', settingsB], { POSD_BACKUP_PASSPHRASE: 'correct horse battery staple' });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(readFileSync(settingsB, 'utf8')).not.toContain('correct horse');
      expect(JSON.parse(readFileSync(settingsB, 'utf8'))).toEqual({ backup: { keep: 2 } });

      // A new pair: later backups are sealed to it, this one still opens only with the key from init.
      const made = await runPosd(['backup', 'recovery-key', '--data', boxA, '--config', settingsA, '--json']);
      expect(made.code).toBe(0);
      const fresh = JSON.parse(made.stdout) as { recovery_key: string; recovery_key_id: string; replaced: string };
      expect(fresh.replaced).toBe(inst.recovery_key_id);
      expect(fresh.recovery_key_id).not.toBe(inst.recovery_key_id);
      const boxC = join(root, 'c');
      const settingsC = join(root, 'etc-c', 'posd.json');
      const newKey = await runPosd(['restore', file, '--data', boxC, '--config', settingsC, '--recovery-key-file', '-'], {}, fresh.recovery_key);
      expect(newKey.code).toBe(2);
      expect(newKey.stderr).toContain(`is not the one this backup was sealed to (${inst.recovery_key_id})`);
      const oldKey = await runPosd(['restore', file, '--data', boxC, '--config', settingsC, '--recovery-key-file', '-'], {}, inst.recovery_key);
      expect(oldKey.stderr).toBe('');
      expect(oldKey.code).toBe(0);
      expect(readFileSync(settingsC, 'utf8')).not.toContain('correct horse');
      const later = await runPosd(['backup', '--data', boxA, '--config', settingsA, '--to', join(root, 'later.db')]);
      expect(later.stdout).toContain(`secrets sealed to recovery key ${fresh.recovery_key_id} and backup.passphrase`);
    },
  );
});
