import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { runPosd } from '../helpers/process.js';
import { openDatabase } from '../../src/db/database.js';

let dir: string | undefined;
afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

it('posd terminals add, list and retire; the pairing token is shown once and stored hashed', { timeout: 60_000 }, async () => {
  dir = mkdtempSync(join(tmpdir(), 'posd-cli-terminals-'));
  const inst = JSON.parse((await runPosd(['init', '--data', dir, '--json'])).stdout);
  const added = await runPosd(['terminals', 'add', '--data', dir, '--account', inst.sandbox_id, '--name', 'Caja 1', '--json']);
  expect(added.code).toBe(0);
  const t = JSON.parse(added.stdout);
  expect(t).toMatchObject({ name: 'Caja 1', transport: 'websocket', availability: 'unavailable', account_id: inst.sandbox_id });
  const serial = JSON.parse(
    (
      await runPosd([
        'terminals',
        'add',
        '--data',
        dir,
        '--account',
        inst.sandbox_id,
        '--name',
        'Caja 2',
        '--serial-path',
        '/dev/ttyUSB0',
        '--baud-rate',
        '9600',
        '--json',
      ])
    ).stdout,
  );
  expect(serial).toMatchObject({ transport: 'serial', serial_path: '/dev/ttyUSB0', baud_rate: 9600 });

  const db = openDatabase(join(dir, 'posd.db'));
  const row = db.prepare('SELECT token_hash FROM terminals WHERE id = ?').get(t.id) as { token_hash: string };
  db.close();
  expect(row.token_hash).toBe(createHash('sha256').update(t.pairing_token).digest('hex'));

  const listed = JSON.parse((await runPosd(['terminals', 'list', '--data', dir, '--account', inst.sandbox_id, '--json'])).stdout);
  expect(listed.map((x: { id: string }) => x.id).sort()).toEqual([t.id, serial.id].sort());
  expect(JSON.stringify(listed)).not.toContain(t.pairing_token);
  const table = await runPosd(['terminals', 'list', '--data', dir, '--account', inst.sandbox_id]);
  expect(table.stdout).toContain('Caja 1');

  // Issue 37: no --account needed. list shows every account's terminals (live and sandbox) with
  // their account; retire finds the account from the terminal id.
  const live = JSON.parse((await runPosd(['terminals', 'add', '--data', dir, '--account', inst.account_id, '--name', 'Caja 3', '--json'])).stdout);
  const all = JSON.parse((await runPosd(['terminals', 'list', '--data', dir, '--json'])).stdout);
  expect(all.map((x: { id: string; account_id: string }) => `${x.id} ${x.account_id}`).sort()).toEqual(
    [`${t.id} ${inst.sandbox_id}`, `${serial.id} ${inst.sandbox_id}`, `${live.id} ${inst.account_id}`].sort(),
  );
  expect((await runPosd(['terminals', 'list', '--data', dir])).stdout).toMatch(new RegExp(`Caja 3.*${inst.account_id}`));
  const wrongAccount = await runPosd(['terminals', 'retire', t.id, '--data', dir, '--account', inst.account_id]);
  expect(wrongAccount.code).toBe(2);
  const retired = await runPosd(['terminals', 'retire', t.id, '--data', dir]);
  expect(retired.stderr).toBe('');
  expect(retired.code).toBe(0);
  const after = JSON.parse((await runPosd(['terminals', 'list', '--data', dir, '--account', inst.sandbox_id, '--json'])).stdout);
  expect(after.map((x: { id: string }) => x.id)).toEqual([serial.id]);

  const again = await runPosd(['terminals', 'retire', t.id, '--data', dir]);
  expect(again.code).toBe(2);
  expect(again.stderr).toMatch(/^posd: No terminal/);
  const unknown = await runPosd(['terminals', 'retire', 'term_nope', '--data', dir]);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toMatch(/^posd: No terminal with id term_nope/);
  const badAccount = await runPosd(['terminals', 'add', '--data', dir, '--account', 'ac_nope', '--name', 'x']);
  expect(badAccount.code).toBe(2);
  const badBaud = await runPosd([
    'terminals',
    'add',
    '--data',
    dir,
    '--account',
    inst.sandbox_id,
    '--name',
    'x',
    '--serial-path',
    '/dev/x',
    '--baud-rate',
    'fast',
  ]);
  expect(badBaud.code).toBe(2);
  expect(badBaud.stderr).not.toMatch(/at .*\.js/); // one line, no stack trace
});
