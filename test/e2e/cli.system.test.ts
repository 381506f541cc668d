import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runPosd } from '../helpers/process.js';
import { startTestServer } from '../helpers/server.js';
import { openDatabase } from '../../src/db/database.js';
import { parseRecoveryKey } from '../../src/system/recovery-key.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'posd-cli-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('posd init, keys and accounts', () => {
  it('init --json prints ids and keys and nothing else; the keys are stored only as hashes', async () => {
    const r = await runPosd(['init', '--data', dir, '--json', '--name', 'Tienda Centro']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(Object.keys(out).sort()).toEqual([
      'account_id',
      'event_formats',
      'keys',
      'organization_id',
      'recovery_key',
      'recovery_key_id',
      'sandbox_id',
      'tls_ca',
    ]);
    // Only the public half of the recovery key stays on the box.
    expect(out.recovery_key).toMatch(/^POSD-RK1-/);
    expect(out.recovery_key_id).toMatch(/^rk-[0-9a-f]{12}$/);
    expect(out.account_id).toMatch(/^ac_[0-9a-z]{16}$/);
    expect(out.sandbox_id).toMatch(/^sbx_[0-9a-z]{16}$/);
    expect(out.keys.live).toMatch(/^sk_live_/);
    expect(out.keys.test).toMatch(/^sk_test_/);
    const db = openDatabase(join(dir, 'posd.db'));
    const dump = JSON.stringify(db.prepare('SELECT * FROM api_keys').all());
    db.close();
    for (const name of readdirSync(dir, { recursive: true }) as string[]) {
      if (!statSync(join(dir, name)).isFile()) continue;
      const bytes = readFileSync(join(dir, name));
      expect(bytes.includes(parseRecoveryKey(out.recovery_key))).toBe(false);
      expect(bytes.includes(parseRecoveryKey(out.recovery_key).toString('base64'))).toBe(false);
    }
    expect(dump).not.toContain(out.keys.live);
    expect(dump).not.toContain(out.keys.test);

    const again = await runPosd(['init', '--data', dir]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already holds an installation/);
  });

  it('creates, lists and revokes keys; creates connected accounts', { timeout: 120_000 }, async () => {
    const inst = JSON.parse((await runPosd(['init', '--data', dir, '--json'])).stdout);
    const child = JSON.parse((await runPosd(['accounts', 'create', '--data', dir, '--name', 'Sucursal', '--parent', inst.account_id, '--json'])).stdout);
    expect(child.parent_account_id).toBe(inst.account_id);
    const key = JSON.parse((await runPosd(['keys', 'create', '--data', dir, '--account', child.account_id, '--env', 'test', '--json'])).stdout);
    expect(key).toMatchObject({ environment: 'test', account_id: child.sandbox_id });
    expect(key.key.startsWith(key.prefix)).toBe(true);
    const org = JSON.parse((await runPosd(['keys', 'create', '--data', dir, '--organization', inst.organization_id, '--env', 'live', '--json'])).stdout);
    expect(org).toMatchObject({ organization_id: inst.organization_id, environment: 'live' });
    expect(org.key).toMatch(/^sk_org_live_/);

    const list = await runPosd(['keys', 'list', '--data', dir]);
    expect(list.stdout).toContain(key.prefix);
    expect(list.stdout).not.toContain(key.key);
    expect((await runPosd(['keys', 'revoke', key.prefix, '--data', dir])).code).toBe(0);
    const twice = await runPosd(['keys', 'revoke', key.prefix, '--data', dir]);
    expect(twice.code).toBe(2);
    expect(twice.stderr.trim()).toBe(`posd: no active key with prefix ${key.prefix}`);
    const accounts = await runPosd(['accounts', 'list', '--data', dir, '--json']);
    expect(JSON.parse(accounts.stdout).map((a: { id: string }) => a.id)).toContain(child.account_id);
  });

  it('bad arguments and bad configuration give one line and a non-zero exit, never a stack trace', { timeout: 120_000 }, async () => {
    await runPosd(['init', '--data', dir, '--json']);
    const cases: Array<[string[], RegExp]> = [
      [['keys', 'create', '--data', dir, '--env', 'staging', '--account', 'ac_x'], /error: option '--env <env>' argument 'staging' is invalid/],
      [['keys', 'create', '--data', dir, '--env', 'live'], /posd: name exactly one of --account or --organization/],
      [['keys', 'create', '--data', dir, '--env', 'live', '--account', 'ac_nope'], /posd: no account ac_nope/],
      [['accounts', 'create', '--data', dir, '--name', 'x', '--parent', 'ac_nope'], /posd: no live account ac_nope/],
      [['frobnicate'], /error: unknown command 'frobnicate'/],
      [['init', '--data', dir, '--role', 'hub'], /argument 'hub' is invalid/],
    ];
    for (const [args, re] of cases) {
      const r = await runPosd(args);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.stderr, args.join(' ')).toMatch(re);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    const cfg = join(dir, 'bad.json');
    writeFileSync(cfg, JSON.stringify({ http: { port: 70000 } }));
    const bad = await runPosd(['keys', 'list', '--data', dir, '--config', cfg]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toMatch(/^posd: config: http\.port: /);
    writeFileSync(cfg, '{ not json');
    const broken = await runPosd(['keys', 'list', '--data', dir, '--config', cfg]);
    expect(broken.stderr.trim()).toMatch(/^posd: config file .*bad\.json: not a JSON object/);
  });
});

describe('posd accounts settings (issue 15)', () => {
  it('turns the settings behind 403 bookings_not_enabled and money_movement_not_enabled off and on, seen by the running daemon at once', async () => {
    const s = await startTestServer();
    try {
      const sbx = s.installation.sandbox_id;
      const off = await runPosd([
        'accounts',
        'settings',
        sbx,
        '--data',
        s.dataDir,
        '--set',
        'bookings_enabled=false',
        '--set',
        'money_movement_enabled=false',
        '--json',
      ]);
      expect(off.code, off.stderr).toBe(0);
      expect(JSON.parse(off.stdout)).toEqual({
        account_id: sbx,
        event_format: 'unified',
        settings: { bookings_enabled: false, money_movement_enabled: false, tax_invoicing_enabled: null, embed_origins: '*' },
      });
      const refused = await s.api('GET', '/bookings');
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('bookings_not_enabled');
      const on = await runPosd(['accounts', 'settings', sbx, '--data', s.dataDir, '--unset', 'bookings_enabled', '--set', 'money_movement_enabled=true']);
      expect(on.code, on.stderr).toBe(0);
      expect(on.stdout).toContain('bookings_enabled: true');
      expect((await s.api('GET', '/bookings')).status).toBe(200);
      const bad = await runPosd(['accounts', 'settings', sbx, '--data', s.dataDir, '--set', 'bookings_enabled=maybe']);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('key=true|false');
    } finally {
      await s.stop();
    }
  });
});
