/**
 * posd killed with SIGKILL after dispatch, then restarted on the same data: every command resumes
 * where it was, and the terminal's result, kept while posd was gone, is committed exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { call, freePort, kill9, startPosd, type PosdProcess } from './helpers/posd-process.js';
import { approvedDetails, connectWsTerminal, type ScriptedTerminal } from './helpers/scripted-terminal.js';

let posd: PosdProcess | undefined;
let terminal: ScriptedTerminal | undefined;
let dataDir: string | undefined;
afterEach(async () => {
  await terminal?.close().catch(() => {});
  if (posd) await kill9(posd);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Polls the API until the command reaches `status` (the other process commits on its own time). */
async function statusOf(url: string, key: string, id: string): Promise<string> {
  return (await call(url, key, 'GET', `/terminal_session_commands/${id}`)).body.status;
}

it('a SIGKILL after dispatch loses nothing: restart, reconnect, result committed once', async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'posd-crash-'));
  const env = {
    POSD_DATA: dataDir,
    POSD_HTTP_PORT: String(await freePort()),
    POSD_TERMINALS_PING_INTERVAL_MS: '0',
    POSD_LIMITS_PER_KEY_PER_SECOND: '10000',
  };
  posd = await startPosd(env);
  const key = posd.testKey!;
  expect(key).toMatch(/^sk_test_/);
  const trm = await call(posd.url, key, 'POST', '/terminals', { name: 'Till 1' });
  expect(trm.status).toBe(201);

  terminal = await connectWsTerminal(posd.url, trm.body.id, trm.body.pairing_token);
  expect((await terminal.hello()).type).toBe('welcome');
  const a = await call(posd.url, key, 'POST', '/terminal_session_commands', {
    terminal_id: trm.body.id,
    external_id: 'sale-a',
    amount_in_cents: 12345,
  });
  expect(a.status).toBe(201);
  await terminal.next('charge', (c) => c.command_id === a.body.id);
  await terminal.ack(a.body.id);
  await terminal.progress(a.body.id, 'authorizing');
  await expect.poll(() => statusOf(posd!.url, key, a.body.id), { timeout: 10_000 }).toBe('dispatched');
  // A second sale waits behind the first; a cancel of the first can only be a request.
  const b = await call(posd.url, key, 'POST', '/terminal_session_commands', {
    terminal_id: trm.body.id,
    external_id: 'sale-b',
    amount_in_cents: 700,
  });
  expect(b.body.status).toBe('pending');
  const del = await call(posd.url, key, 'DELETE', `/terminal_session_commands/${a.body.id}`);
  expect(del.status).toBe(202);
  await terminal.next('cancel', (c) => c.command_id === a.body.id);

  await kill9(posd);
  await terminal.link.whenDown;

  posd = await startPosd(env);
  expect(posd.testKey).toBeUndefined(); // the same installation, not a new one
  const resumedA = (await call(posd.url, key, 'GET', `/terminal_session_commands/${a.body.id}`)).body;
  expect(resumedA).toMatchObject({ status: 'cancel_requested', final: false, terminal_availability: 'unavailable' });
  expect(await statusOf(posd.url, key, b.body.id)).toBe('pending');

  // The terminal finished the authorization while posd was down: approved, never acknowledged.
  terminal = await connectWsTerminal(posd.url, trm.body.id, trm.body.pairing_token);
  const result = { command_id: a.body.id, outcome: 'approved' as const, ...approvedDetails('approved') };
  expect((await terminal.hello({ unacknowledged_results: [result] })).type).toBe('welcome');
  await terminal.next('result_ack', (r) => r.command_id === a.body.id);
  const doneA = (await call(posd.url, key, 'GET', `/terminal_session_commands/${a.body.id}`)).body;
  expect(doneA).toMatchObject({ status: 'consumed', final: true, canceled_at: null });
  // Then, and only then, the next sale.
  await terminal.next('charge', (c) => c.command_id === b.body.id);

  // The result arriving once more (a lost result_ack) changes nothing.
  await terminal.result(a.body.id, 'approved');
  await terminal.next('result_ack', (r) => r.command_id === a.body.id);
  expect((await call(posd.url, key, 'GET', `/terminal_session_commands/${a.body.id}`)).body).toEqual(doneA);
});

it('a restart resumes a dispatched command and re-sends nothing the terminal already holds', async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'posd-crash-'));
  const env = { POSD_DATA: dataDir, POSD_HTTP_PORT: String(await freePort()), POSD_TERMINALS_PING_INTERVAL_MS: '0' };
  posd = await startPosd(env);
  const key = posd.testKey!;
  const trm = await call(posd.url, key, 'POST', '/terminals', { name: 'Till 2' });
  terminal = await connectWsTerminal(posd.url, trm.body.id, trm.body.pairing_token);
  await terminal.hello();
  const a = await call(posd.url, key, 'POST', '/terminal_session_commands', {
    terminal_id: trm.body.id,
    external_id: 'sale-c',
    amount: 25.5,
  });
  expect(a.body.amount_in_cents).toBe(2550);
  await terminal.next('charge');
  await terminal.ack(a.body.id);
  await expect.poll(() => statusOf(posd!.url, key, a.body.id), { timeout: 10_000 }).toBe('dispatched');
  await kill9(posd);
  await terminal.link.whenDown;

  posd = await startPosd(env);
  terminal = await connectWsTerminal(posd.url, trm.body.id, trm.body.pairing_token);
  await terminal.hello({ current_command_id: a.body.id });
  await terminal.result(a.body.id, 'declined');
  await terminal.next('result_ack');
  expect(await statusOf(posd.url, key, a.body.id)).toBe('failed');
  expect(terminal.count('charge')).toBe(0);
});

it('over a serial line: SIGKILL while authorizing, restart reopens the port, the result is committed once', async () => {
  const { openPtyPair } = await import('../devices/helpers/pty-pair.js');
  const { openSerialTerminal } = await import('./helpers/scripted-terminal.js');
  const pty = await openPtyPair();
  try {
    dataDir = mkdtempSync(join(tmpdir(), 'posd-crash-'));
    const env = { POSD_DATA: dataDir, POSD_HTTP_PORT: String(await freePort()), POSD_TERMINALS_PING_INTERVAL_MS: '0' };
    posd = await startPosd(env);
    const key = posd.testKey!;
    // Registered at a path where nothing is plugged; the config of the restart says where it is.
    const trm = await call(posd.url, key, 'POST', '/terminals', { name: 'Serial till', transport: 'serial', serial_path: '/dev/posd-test-moved' });
    await kill9(posd);
    const withPort = { ...env, POSD_TERMINALS_SERIAL: JSON.stringify([{ terminal_id: trm.body.id, path: pty.a }]) };
    posd = await startPosd(withPort);
    terminal = await openSerialTerminal(pty.b, trm.body.id, trm.body.pairing_token);
    expect((await terminal.hello()).type).toBe('welcome');
    const a = await call(posd.url, key, 'POST', '/terminal_session_commands', { terminal_id: trm.body.id, external_id: 'serial-a', amount_in_cents: 4200 });
    await terminal.next('charge', (c) => c.command_id === a.body.id);
    await terminal.ack(a.body.id);
    await terminal.progress(a.body.id, 'authorizing');
    await expect.poll(() => statusOf(posd!.url, key, a.body.id), { timeout: 10_000 }).toBe('dispatched');

    await kill9(posd);
    posd = await startPosd(withPort);
    expect(await statusOf(posd.url, key, a.body.id)).toBe('dispatched');
    // A serial line has no hang-up: the terminal simply says hello again to the new posd.
    const result = { command_id: a.body.id, outcome: 'approved' as const, ...approvedDetails('approved') };
    expect((await terminal.hello({ unacknowledged_results: [result] })).type).toBe('welcome');
    await terminal.next('result_ack', (r) => r.command_id === a.body.id);
    expect((await call(posd.url, key, 'GET', `/terminal_session_commands/${a.body.id}`)).body).toMatchObject({
      status: 'consumed',
      final: true,
      checkout_status: 'paid',
    });
  } finally {
    await terminal?.close().catch(() => {});
    terminal = undefined;
    await pty.kill();
  }
});
