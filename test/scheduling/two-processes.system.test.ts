import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { spawnDaemon, type DaemonProcess } from '../helpers/process.js';

const dir = mkdtempSync(join(tmpdir(), 'posd-sched-'));
const daemons: DaemonProcess[] = [];
afterAll(async () => {
  for (const d of daemons) {
    if (d.child.exitCode === null) d.child.kill('SIGKILL');
    await d.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

async function call(base: string, key: string, method: 'GET' | 'POST', path: string, body?: unknown) {
  const res = await request(`${base}${path}`, {
    method,
    headers: { 'x-secret-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

describe('one data folder, one daemon', () => {
  it('a second daemon on the same folder is refused; concurrent requests for one slot at the daemon make exactly one booking', async () => {
    const env = { POSD_LIMITS_PER_KEY_PER_SECOND: '10000' };
    const a = spawnDaemon(['--data', dir, '--port', '0'], env);
    daemons.push(a);
    const [, baseA] = await a.waitFor(/API\s+(http:\/\/127\.0\.0\.1:\d+\/api)/);
    const [, key] = await a.waitFor(/test key\s+(sk_test_[0-9A-Za-z]+)/);
    await a.waitFor(/"msg":"posd listening"/);
    // Two daemons writing one file would race their workers (holds, feeds, deliveries): the lock refuses it.
    const b = spawnDaemon(['--data', dir, '--port', '0'], env);
    daemons.push(b);
    expect((await b.exited).code).toBe(2);
    expect(b.stderr().trim()).toMatch(/^posd: a posd daemon \(pid \d+\) is running on /);
    const baseB = baseA;

    const svc = await call(baseA, key, 'POST', '/services', { kind: 'appointment', name: 'Cut', duration_minutes: 45, price_in_cents: 10_000 });
    const staff = await call(baseB, key, 'POST', '/staff_members', { name: 'Ana' });
    expect([svc.status, staff.status]).toEqual([201, 201]);
    const startsAt = `${new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 11)}15:00:00Z`;
    const body = (i: number) => ({ service_id: svc.body.id, starts_at: startsAt, staff_member_id: staff.body.id, customer: { email: `p${i}@example.com` } });
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => call(i % 2 ? baseA : baseB, key, 'POST', '/bookings', body(i))));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 422 && r.body.code === 'slot_unavailable')).toHaveLength(29);
    const listed = await call(baseB, key, 'GET', `/bookings?staff_member_id=${staff.body.id}`);
    expect(listed.body).toHaveLength(1);
  }, 90_000);
});
