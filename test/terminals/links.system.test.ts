/** Link plumbing: heartbeat and availability, serial terminals from the config, upgrades elsewhere. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import WebSocket from 'ws';
import { afterEach, expect, it } from 'vitest';
import { ManualClock } from '../../devices/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { validateConfig } from '../../src/config.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { openPtyPair, type PtyPair } from '../devices/helpers/pty-pair.js';
import { openSerialTerminal, type ScriptedTerminal } from './helpers/scripted-terminal.js';
import { request } from 'undici';
import { until } from '../helpers/until.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function rawClient(url: string): Promise<{ ws: WebSocket; received: Array<Record<string, unknown>> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/terminals/link`);
    const received: Array<Record<string, unknown>> = [];
    ws.on('message', (d) => received.push(JSON.parse(String(d))));
    ws.once('error', reject);
    ws.once('open', () => resolve({ ws, received }));
  });
}

it('availability and last_seen_at follow the heartbeat; three missed pings make the terminal unavailable', async () => {
  const t0 = Date.parse('2026-04-01T10:00:00.000Z');
  const clock = new ManualClock(t0);
  const s: TestServer = await startTestServer({ clock, config: { terminals: { ping_interval_ms: 10_000, max_missed_pings: 3 } } });
  cleanups.push(() => s.stop());
  const trm = (await s.api('POST', '/terminals', { body: { name: 'Heartbeat' } })).body;
  const { ws, received } = await rawClient(s.url);
  cleanups.push(() => ws.terminate());
  ws.send(
    JSON.stringify({
      type: 'hello',
      terminal_id: trm.id,
      token: trm.pairing_token,
      model: 'raw',
      firmware: '0.1',
      protocol: 1,
      current_command_id: null,
      unacknowledged_results: [],
    }),
  );
  await until('the welcome', () => received.some((m) => m.type === 'welcome'));
  const get = async () => (await s.api('GET', `/terminals/${trm.id}`)).body;
  await expect.poll(async () => (await get()).availability, { timeout: 10_000 }).toBe('available');
  expect((await get()).last_seen_at).toBe(new Date(t0).toISOString());

  // A ping from the terminal is traffic: the next heartbeat check records it.
  ws.send(JSON.stringify({ type: 'ping' }));
  await until('the pong', () => received.some((m) => m.type === 'pong'));
  clock.advance(10_000);
  expect((await get()).last_seen_at).toBe(new Date(t0 + 10_000).toISOString());

  // From now on the terminal answers nothing.
  clock.advance(10_000);
  clock.advance(10_000);
  expect((await get()).availability).toBe('available');
  const closed = new Promise((r) => ws.once('close', r));
  clock.advance(10_000);
  expect(await get()).toMatchObject({ availability: 'unavailable', last_seen_at: new Date(t0 + 10_000).toISOString() });
  await closed;
});

it('a serial terminal configured in terminals.serial is opened at start and charged', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'posd-serial-config-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  // First start: register the terminal (its path in the registry is not where it is plugged).
  const first = await startTestServer({ dataDir, config: { terminals: { ping_interval_ms: 0 } } });
  const trm = (await first.api('POST', '/terminals', { body: { name: 'Serial', transport: 'serial', serial_path: '/dev/posd-test-absent' } })).body;
  const testKey = first.installation.keys.test;
  await first.stop();

  const pty: PtyPair = await openPtyPair();
  cleanups.push(() => pty.kill());
  const config = validateConfig({
    data_dir: dataDir,
    http: { port: 0, host: '127.0.0.1' },
    terminals: { ping_interval_ms: 0, hello_timeout_ms: 5_000, serial: [{ terminal_id: trm.id, path: pty.a, baud_rate: 57_600 }] },
  });
  const daemon: Daemon = await startDaemon({ config, log: pino({ level: 'silent' }) });
  cleanups.push(() => daemon.stop());
  const terminal: ScriptedTerminal = await openSerialTerminal(pty.b, trm.id, trm.pairing_token);
  cleanups.push(() => terminal.close());
  expect((await terminal.hello()).type).toBe('welcome');

  const res = await request(`${daemon.url}/api/terminal_session_commands`, {
    method: 'POST',
    headers: { 'x-secret-key': testKey, 'content-type': 'application/json' },
    body: JSON.stringify({ terminal_id: trm.id, external_id: 'cfg-1', amount_in_cents: 600 }),
  });
  const cmd = (await res.body.json()) as { id: string };
  expect(res.statusCode).toBe(201);
  expect((await terminal.next('charge')).command_id).toBe(cmd.id);
});

it('the link path is the only WebSocket endpoint; a terminal of another transport or a wrong id is refused', async () => {
  const s = await startTestServer({ config: { terminals: { ping_interval_ms: 0 } } });
  cleanups.push(() => s.stop());
  const other = new WebSocket(`${s.url.replace('http', 'ws')}/elsewhere`);
  await expect(new Promise((resolve, reject) => (other.once('open', resolve), other.once('error', reject)))).rejects.toThrow(/404/);
  const serial = (await s.api('POST', '/terminals', { body: { name: 'S', transport: 'serial', serial_path: '/dev/posd-test-none' } })).body;
  const { ws, received } = await rawClient(s.url);
  cleanups.push(() => ws.terminate());
  const closed = new Promise((r) => ws.once('close', r));
  ws.send(
    JSON.stringify({
      type: 'hello',
      terminal_id: serial.id,
      token: serial.pairing_token,
      model: 'x',
      firmware: 'y',
      protocol: 1,
      current_command_id: null,
      unacknowledged_results: [],
    }),
  );
  await closed;
  expect(received).toEqual([expect.objectContaining({ type: 'error', code: 'unauthorized' })]);
  expect((await s.api('GET', '/test')).status).toBe(200);
});
