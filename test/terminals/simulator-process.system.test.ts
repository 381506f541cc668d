/**
 * posd against the devices simulator CLI running as its own processes, one per behaviour, the way
 * a store would see real terminals misbehave.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

const CLI = join(import.meta.dirname, '../../dist/devices/simulator/cli.js');
let s: TestServer;
const sims: ChildProcess[] = [];

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (npm test runs tsc before vitest)`);
  s = await startTestServer({ config: { terminals: { ping_interval_ms: 0 }, limits: { per_key_per_second: 100_000 } } });
});
afterAll(async () => {
  for (const p of sims) p.kill('SIGTERM');
  await Promise.all(sims.map((p) => (p.exitCode === null ? new Promise((r) => p.once('exit', r)) : null)));
  await s.stop();
});

async function simulated(behaviour: string, delays: { waiting: number; reading: number; authorizing: number }) {
  const trm = (await s.api('POST', '/terminals', { body: { name: behaviour } })).body;
  const events: Array<{ event: string; data: any }> = [];
  const proc = spawn(
    process.execPath,
    [
      CLI,
      '--url',
      `${s.url.replace('http', 'ws')}/terminals/link`,
      '--terminal-id',
      trm.id,
      '--token',
      trm.pairing_token,
      '--behaviour',
      behaviour,
      '--delay-waiting-card',
      String(delays.waiting),
      '--delay-reading',
      String(delays.reading),
      '--delay-authorizing',
      String(delays.authorizing),
      '--reconnect-delay',
      '100',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  sims.push(proc);
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      events.push(JSON.parse(buf.slice(0, i)));
      buf = buf.slice(i + 1);
    }
  });
  await expect.poll(() => events.some((e) => e.event === 'welcome'), { timeout: 10_000 }).toBe(true);
  return { id: trm.id as string, events };
}

const status = async (id: string) => (await s.api('GET', `/terminal_session_commands/${id}`)).body;
let seq = 0;
const charge = async (terminalId: string) =>
  (await s.api('POST', '/terminal_session_commands', { body: { terminal_id: terminalId, external_id: `sim-${++seq}`, amount_in_cents: 2000 } })).body;

it('a terminal that drops its link while authorizing comes back and its payment is committed once', async () => {
  const t = await simulated('disconnect_while_authorizing', { waiting: 10, reading: 10, authorizing: 400 });
  const cmd = await charge(t.id);
  await expect.poll(async () => (await status(cmd.id)).status, { timeout: 15_000 }).toBe('consumed');
  expect(t.events.filter((e) => e.event === 'disconnected')).toHaveLength(1);
  // It replays the result in its hello and again after welcome: both acknowledged, one payment. The
  // acknowledgement follows the flush of the result's commit, which a read may see before it ends.
  await expect.poll(() => t.events.filter((e) => e.event === 'result_ack').length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
  const done = await status(cmd.id);
  const succeeded = (s.daemon.ctx.db.prepare(`SELECT payload FROM events WHERE type = 'intent.succeeded'`).all() as Array<{ payload: string }>).filter(
    (e) => JSON.parse(e.payload).checkout?.id === done.checkout_id,
  );
  expect(succeeded).toHaveLength(1);
});

it('a terminal that ignores the cancel: 202, then its real outcome, never canceled', async () => {
  const t = await simulated('ignore_cancel', { waiting: 300, reading: 50, authorizing: 50 });
  const cmd = await charge(t.id);
  await expect.poll(() => t.events.some((e) => e.event === 'charge'), { timeout: 10_000 }).toBe(true);
  const del = await s.api('DELETE', `/terminal_session_commands/${cmd.id}`);
  expect([202, 409]).toContain(del.status);
  await expect.poll(async () => (await status(cmd.id)).final, { timeout: 15_000 }).toBe(true);
  expect(await status(cmd.id)).toMatchObject({ status: 'consumed', canceled_at: null });
});

it('a terminal that cancels when asked before authorizing: canceled once it says so', async () => {
  const t = await simulated('slow', { waiting: 5_000, reading: 50, authorizing: 50 });
  const cmd = await charge(t.id);
  await expect.poll(() => t.events.some((e) => e.event === 'stage'), { timeout: 10_000 }).toBe(true);
  const del = await s.api('DELETE', `/terminal_session_commands/${cmd.id}`);
  expect(del.status).toBe(202);
  await expect.poll(async () => (await status(cmd.id)).status, { timeout: 15_000 }).toBe('canceled');
});

it('a terminal that sends garbage first still completes its charge', async () => {
  const t = await simulated('garbage', { waiting: 10, reading: 10, authorizing: 10 });
  const cmd = await charge(t.id);
  await expect.poll(async () => (await status(cmd.id)).status, { timeout: 15_000 }).toBe('consumed');
  expect(t.events.some((e) => e.event === 'garbage_sent')).toBe(true);
});
