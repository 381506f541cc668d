import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { runPosd, spawnDaemon, type DaemonProcess } from '../helpers/process.js';
import { until } from '../helpers/until.js';

// Issue 16: "sync can stall silently": no alert when the oldest waiting record ages or the link stays
// down; a record the central cannot apply held up its store's later records with no operator action;
// doctor and /metrics knew nothing of sync and webhooks. A central and a store as separate processes.

const dirs: string[] = [];
const daemons: DaemonProcess[] = [];

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'posd-syncalert-'));
  dirs.push(d);
  return d;
}

async function serve(args: string[], env: Record<string, string> = {}): Promise<{ d: DaemonProcess; url: string }> {
  const d = spawnDaemon(['--port', '0', ...args], env);
  daemons.push(d);
  const [, url] = await d.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)\/api"/, 90_000);
  return { d, url };
}

afterEach(async () => {
  for (const d of daemons.splice(0)) {
    if (d.child.exitCode === null && d.child.signalCode === null) {
      d.child.kill('SIGKILL');
      await d.exited;
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type Check = { name: string; ok: boolean; detail: string; fix?: string };
async function doctorSync(data: string, env: Record<string, string> = {}): Promise<Check[]> {
  const r = await runPosd(['doctor', '--data', data, '--json'], env);
  return (JSON.parse(r.stdout) as { checks: Check[] }).checks.filter((c) => c.name === 'sync');
}

async function api(url: string, key: string, method: string, path: string, body?: unknown) {
  const res = await request(`${url}${path}`, {
    method: method as 'GET',
    headers: { 'x-secret-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text };
}

describe('sync that raises its hand', () => {
  it(
    'parks a record the central cannot apply while the store flows on; retry and skip; alerts for ageing records and a link down; doctor and /metrics',
    { timeout: 600_000 },
    async () => {
      const c = dir();
      const s = dir();
      const inst = JSON.parse((await runPosd(['init', '--role', 'central', '--data', c, '--json'])).stdout) as { account_id: string; keys: { live: string } };
      const central = await serve(['--data', c]);
      const joined = await runPosd(['init', '--central-url', central.url, '--central-key', inst.keys.live, '--data', s]);
      expect(joined.stderr).toBe('');
      // Doctor reads the same settings as the daemon it checks.
      const alertEnv = { POSD_SYNC_ALERT_WAITING_MS: '1000', POSD_SYNC_ALERT_LINK_DOWN_MS: '1000' };
      const store = await serve(['--data', s], { ...alertEnv, POSD_SYNC_BACKOFF_MAX_MS: '500' });
      const key = inst.keys.live;

      // The central cannot apply one sale: a trigger in its database (a stand-in for an applier bug).
      const cdb = new Database(join(c, 'posd.db'));
      cdb.pragma('busy_timeout = 5000');
      const refuse = () =>
        cdb.exec(
          `CREATE TRIGGER refuse_4242 BEFORE INSERT ON cash_intents WHEN NEW.amount_in_cents = 4242 BEGIN SELECT RAISE(ABORT, 'cannot apply this sale'); END`,
        );
      refuse();
      const bad = await api(store.url, key, 'POST', '/api/cash_sales', { amount_in_cents: 4242, currency: 'GTQ' });
      expect(bad.status).toBe(201);
      const good = await api(store.url, key, 'POST', '/api/cash_sales', { amount_in_cents: 100, currency: 'GTQ' });
      expect(good.status).toBe(201);
      // The store's later record is applied past the parked one: nothing waits at the store.
      await until('the store to drain', async () => (await api(store.url, key, 'GET', '/sync/status')).body.records_waiting === 0 || undefined, 60_000);
      await until(
        'the good sale at the central',
        () => (cdb.prepare('SELECT count(*) FROM intents WHERE id = ?').pluck().get(good.body.id) as number) === 1 || undefined,
        60_000,
      );
      expect(cdb.prepare('SELECT count(*) FROM intents WHERE id = ?').pluck().get(bad.body.id)).toBe(0);

      const listed = await runPosd(['sync', 'records', '--data', c, '--json']);
      expect(listed.code).toBe(0);
      const parked = JSON.parse(listed.stdout) as Array<{ id: string; kind: string; reason: string }>;
      expect(parked).toHaveLength(1);
      expect(parked[0]).toMatchObject({ kind: 'cash_sale', reason: expect.stringContaining('cannot apply this sale') });
      const centralDoctor = await doctorSync(c);
      expect(centralDoctor).toEqual([
        expect.objectContaining({
          ok: false,
          detail: '1 record(s) from stores could not be applied and are parked',
          fix: expect.stringContaining('posd sync retry'),
        }),
      ]);
      const cm = await (await request(`${central.url}/metrics`)).body.text();
      expect(cm).toContain('posd_sync_records{state="parked"} 1');
      expect(cm).toContain('posd_sync_alerts{code="sync_records_parked"} 1');

      // Fixed at the central: retried, applied by the running central.
      cdb.exec('DROP TRIGGER refuse_4242');
      const retried = await runPosd(['sync', 'retry', parked[0].id, '--data', c]);
      expect(retried.stderr).toBe('');
      expect(retried.stdout).toBe(`${parked[0].id}  applied\n`);
      expect(cdb.prepare('SELECT count(*) FROM intents WHERE id = ?').pluck().get(bad.body.id)).toBe(1);
      expect(await doctorSync(c)).toEqual([expect.objectContaining({ ok: true })]);

      // One the operator gives up on: skipped, with the reason kept and listed.
      refuse();
      expect((await api(store.url, key, 'POST', '/api/cash_sales', { amount_in_cents: 4242, currency: 'GTQ' })).status).toBe(201);
      const second = await until(
        'the second parked record',
        async () => (JSON.parse((await runPosd(['sync', 'records', '--data', c, '--json'])).stdout) as Array<{ id: string }>)[0],
        60_000,
      );
      expect((await runPosd(['sync', 'skip', second.id, '--data', c])).code).not.toBe(0); // a reason is required
      const skip = await runPosd(['sync', 'skip', second.id, '--reason', 'entered twice at the till', '--data', c]);
      expect(skip.stdout).toBe(`${second.id} skipped: entered twice at the till\n`);
      expect(JSON.parse((await runPosd(['sync', 'records', '--skipped', '--data', c, '--json'])).stdout)).toEqual([
        expect.objectContaining({
          id: second.id,
          outcome: 'skipped',
          note: 'entered twice at the till',
          reason: expect.stringContaining('cannot apply this sale'),
        }),
      ]);
      expect(await doctorSync(c)).toEqual([expect.objectContaining({ ok: true, detail: expect.stringContaining('1 skipped by an operator') })]);
      cdb.exec('DROP TRIGGER refuse_4242');

      // The central answers but takes nothing (its database is held by another writer): the records age.
      cdb.exec('BEGIN IMMEDIATE');
      expect((await api(store.url, key, 'POST', '/api/cash_sales', { amount_in_cents: 300, currency: 'GTQ' })).status).toBe(201);
      await store.d.waitFor(/"event":"sync_stalled"/, 60_000);
      const stalled = await doctorSync(s, alertEnv);
      expect(stalled).toEqual([
        expect.objectContaining({
          ok: false,
          detail: expect.stringMatching(/^\d+ record\(s\) waiting for the central, the oldest for .*, although the central answers/),
        }),
      ]);
      cdb.exec('COMMIT');
      await store.d.waitFor(/"event":"sync_recovered","cleared":"sync_stalled"/, 60_000);
      expect(await doctorSync(s, alertEnv)).toEqual([expect.objectContaining({ ok: true })]);
      cdb.close();

      // The link goes down for longer than the window.
      central.d.child.kill('SIGTERM');
      await central.d.exited;
      expect((await api(store.url, key, 'POST', '/api/cash_sales', { amount_in_cents: 500, currency: 'GTQ' })).status).toBe(201);
      await store.d.waitFor(/"event":"sync_link_down"/, 60_000);
      const down = await doctorSync(s, alertEnv);
      expect(down).toEqual([
        expect.objectContaining({ ok: false, detail: expect.stringMatching(/^no contact with the central for .* \(since .*\); \d+ record\(s\) waiting/) }),
      ]);
      const sm = await (await request(`${store.url}/metrics`)).body.text();
      expect(sm).toContain('posd_sync_link_up 0');
      expect(Number(/posd_sync_records\{state="waiting"\} (\d+)/.exec(sm)![1])).toBeGreaterThan(0);
      expect(sm).toContain('posd_sync_alerts{code="sync_link_down"} 1');
      expect(Number(/^posd_sync_oldest_waiting_age_seconds (\S+)$/m.exec(sm)![1])).toBeGreaterThan(0);
      expect(Number(/^posd_sync_last_success_timestamp_seconds (\S+)$/m.exec(sm)![1])).toBeGreaterThan(Date.parse('2026-01-01') / 1000);
      expect(sm).toContain('posd_webhook_deliveries_pending 0');
      expect(sm).toContain('posd_webhook_endpoints_failing 0');
      expect(sm).toMatch(/posd_build_info\{version="\d+\.\d+\.\d+",node="[\d.]+",schema="\d+",role="store"\} 1/);
      expect(sm).toMatch(/^process_resident_memory_bytes \d+/m);
      expect(sm).toMatch(/^nodejs_eventloop_lag_seconds /m);
    },
  );
});
