import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { runPosd } from '../helpers/process.js';
import { startTestServer } from '../helpers/server.js';

let dir: string;
let central: Server | undefined;
afterEach(() => {
  central?.close();
  central = undefined;
  rmSync(dir, { recursive: true, force: true });
});

interface Report {
  ok: boolean;
  checks: Array<{ name: string; ok: boolean; detail: string; fix?: string }>;
}

async function doctor(args: string[], opts: { text?: boolean } = {}): Promise<{ code: number | null; report: Report; text: string }> {
  const json = await runPosd(['doctor', ...args, '--json']);
  const text = opts.text ? await runPosd(['doctor', ...args]) : undefined;
  if (text) expect(text.code).toBe(json.code);
  return { code: json.code, report: JSON.parse(json.stdout), text: text?.stdout ?? '' };
}

const check = (r: Report, name: string) => r.checks.find((c) => c.name === name);

async function installed(): Promise<string> {
  dir = mkdtempSync(join(tmpdir(), 'posd-doctor-'));
  const data = join(dir, 'data');
  expect((await runPosd(['init', '--data', data, '--json'])).code).toBe(0);
  chmodSync(data, 0o750);
  return data;
}

describe('posd doctor', () => {
  it('finds a missing backup and a folder open to everyone, says what to do, and passes once they are fixed', async () => {
    const data = await installed();
    chmodSync(data, 0o755);
    const bad = await doctor(['--data', data], { text: true });
    expect(bad.code).toBe(1);
    expect(check(bad.report, 'last backup')).toMatchObject({ ok: false, detail: 'no backup has been taken' });
    expect(check(bad.report, 'data folder permissions')).toMatchObject({ ok: false, fix: `chmod 0750 ${data}` });
    expect(check(bad.report, 'database integrity')).toMatchObject({ ok: true });
    expect(check(bad.report, 'schema version')?.detail).toMatch(/\(current\)$/);
    expect(bad.text).toMatch(/^FAIL {2}last backup\s+no backup has been taken\n\s+-> run posd backup now/m);
    expect(bad.text).toMatch(/2 problem\(s\) found\n$/);

    chmodSync(data, 0o750);
    expect((await runPosd(['backup', '--data', data])).code).toBe(0);
    const good = await doctor(['--data', data], { text: true });
    expect(good.report.checks.filter((c) => !c.ok)).toEqual([]);
    expect(good.code).toBe(0);
    expect(good.text).toMatch(/no problems found\n$/);
  });

  it('checks the stored card payments as the page does: near their caps and their window (issue 37)', async () => {
    const data = await installed();
    const inst = JSON.parse((await runPosd(['doctor', '--data', data, '--json'])).stdout) as Report;
    expect(check(inst, 'stored payments')).toMatchObject({ ok: true });
    // As a terminal's stored results leave them: 9 of GTQ 500 (90% of the default max_total of
    // GTQ 5,000), the oldest stored 40 h ago with 8 h left of its 48 h window (83%).
    const db = new Database(join(data, 'posd.db'));
    db.pragma('foreign_keys = OFF');
    const account = (db.prepare('SELECT id FROM accounts WHERE live_mode = 1').get() as { id: string }).id;
    const now = Date.now();
    const insert = db.prepare(
      `INSERT INTO stored_payments (id, account_id, live_mode, terminal_id, command_id, checkout_id, offline_reference, status, final,
         amount_in_cents, currency, stored_at, forward_by, updated_at)
       VALUES (?, ?, 1, 'tml_1', ?, ?, ?, 'stored', 0, 50000, 'GTQ', ?, ?, ?)`,
    );
    for (let i = 0; i < 9; i++) {
      const stored = new Date(now - (40 - i) * 3_600_000).toISOString();
      insert.run(`spay_${i}`, account, `cmd_${i}`, `chk_${i}`, `OFF-${i}`, stored, new Date(Date.parse(stored) + 48 * 3_600_000).toISOString(), stored);
    }
    db.close();
    const near = await doctor(['--data', data], { text: true });
    expect(near.code).toBe(1);
    const c = check(near.report, 'stored payments')!;
    expect(c.ok).toBe(false);
    expect(c.detail).toContain('near their caps');
    expect(c.detail).toMatch(/GTQ 4500\.00 of GTQ 5000\.00 stored \(90% of max_total\)/);
    expect(c.detail).toMatch(/^.*2 card payment\(s\) stored offline used 80% or more of their window/m);
    expect(c.detail).not.toContain('within the hour');
    expect(c.fix).toContain('posd payments offline caps');
    expect(near.text).toMatch(/^FAIL {2}stored payments/m);
  });

  it('reports a damaged database and a missing data folder', async () => {
    const data = await installed();
    await runPosd(['backup', '--data', data]);
    const file = join(data, 'posd.db');
    const bytes = readFileSync(file);
    bytes.fill(0x33, 4096, 4096 * 3);
    writeFileSync(file, bytes);
    const r = await doctor(['--data', data]);
    expect(r.code).toBe(1);
    expect(check(r.report, 'database integrity')).toMatchObject({ ok: false });
    expect(check(r.report, 'database integrity')?.fix).toMatch(/posd restore/);

    const missing = await doctor(['--data', join(dir, 'nowhere')]);
    expect(missing.code).toBe(1);
    expect(check(missing.report, 'data folder')).toMatchObject({ ok: false, detail: `${join(dir, 'nowhere')} does not exist` });
  });

  it("compares the clock with the central's Date header when sync.central_url is set", async () => {
    const data = await installed();
    await runPosd(['backup', '--data', data]);
    let offsetMs = 0;
    central = createServer((_req, res) => {
      res.sendDate = false;
      res.writeHead(200, { date: new Date(Date.now() + offsetMs).toUTCString() }).end();
    }).listen(0, '127.0.0.1');
    await once(central, 'listening');
    const config = join(dir, 'posd.json');
    writeFileSync(config, JSON.stringify({ sync: { central_url: `http://127.0.0.1:${(central.address() as { port: number }).port}/` } }));

    const inTime = await doctor(['--data', data, '--config', config]);
    expect(check(inTime.report, 'clock')).toMatchObject({ ok: true });
    expect(inTime.code).toBe(0);

    offsetMs = 10 * 60_000; // the central is ten minutes ahead: this box is behind
    const skewed = await doctor(['--data', data, '--config', config]);
    expect(skewed.code).toBe(1);
    expect(check(skewed.report, 'clock')).toMatchObject({ ok: false, fix: expect.stringContaining('timedatectl set-ntp true') });
    expect(check(skewed.report, 'clock')?.detail).toMatch(/^-(59\d|60\d) s behind the central$/);

    central.close();
    await once(central, 'close');
    const down = await doctor(['--data', data, '--config', config]);
    expect(check(down.report, 'clock')).toMatchObject({ ok: false, detail: expect.stringMatching(/^cannot reach the central/) });
  });
});

describe('posd doctor and terminal links', () => {
  it('names a serial terminal whose device is missing and says what to do; a usable device passes', async () => {
    dir = mkdtempSync(join(tmpdir(), 'posd-doctor-'));
    const data = join(dir, 'data');
    const server = await startTestServer({ dataDir: data, config: { http: { port: 0, host: '127.0.0.1' }, terminals: { ping_interval_ms: 0 } } });
    const live = server.installation.keys.live;
    const missing = await server.api('POST', '/terminals', {
      key: live,
      body: { name: 'Caja 2', transport: 'serial', serial_path: '/dev/ttyUSB-posd-missing' },
    });
    expect(missing.status).toBe(201);
    const present = await server.api('POST', '/terminals', { key: live, body: { name: 'Caja 3', transport: 'serial', serial_path: '/dev/null' } });
    expect(present.status).toBe(201);
    await server.stop();
    chmodSync(data, 0o750);
    const r = await doctor(['--data', data]);
    expect(check(r.report, `terminal ${missing.body.id}`)).toMatchObject({
      ok: false,
      detail: '/dev/ttyUSB-posd-missing: no such device',
      fix: expect.stringContaining('check the cable'),
    });
    expect(check(r.report, `terminal ${present.body.id}`)).toMatchObject({ ok: true, detail: '/dev/null is reachable' });
    expect(r.code).toBe(1);
  });
});
