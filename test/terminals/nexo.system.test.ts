/**
 * nexo terminals end to end: posd (the built daemon, its own process) drives the nexo simulator
 * (devices/simulator/nexo-simulator.ts) over real HTTPS, every message under NexoCrypto with the
 * shared key, the terminal registered by `posd terminals add --kind nexo` with its passphrase on stdin.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startNexoSimulator, type NexoSimulator } from '../../devices/simulator/nexo-simulator.js';
import { runPosd } from '../helpers/process.js';
import { until } from '../helpers/until.js';
import { makeNexoCertificates } from './helpers/nexo-certs.js';
import { call, freePort, kill9, startPosd, type PosdProcess } from './helpers/posd-process.js';

const POIID = 'V400m-324688179';
const KEY = { keyIdentifier: 'posdtest', passphrase: 'correct horse battery staple', keyVersion: 1 };

let dir: string;
let sim: NexoSimulator;
let certs: ReturnType<typeof makeNexoCertificates>;
let posd: PosdProcess | undefined;
let env: Record<string, string>;
let key: string;
let terminalId: string;
let wrongKeyTerminalId: string;

async function addNexo(account: string, name: string, passphrase: string): Promise<string> {
  const args = ['terminals', 'add', '--data', dir, '--account', account, '--name', name, '--kind', 'nexo', '--address', '127.0.0.1'];
  args.push('--port', String(sim.port), '--poiid', POIID, '--key-identifier', KEY.keyIdentifier, '--key-version', String(KEY.keyVersion), '--json');
  const added = await runPosd(args, {}, `${passphrase}\n`);
  expect(added.stderr).toBe('');
  expect(added.code).toBe(0);
  return JSON.parse(added.stdout).id;
}

async function command(id: string) {
  return (await call(posd!.url, key, 'GET', `/terminal_session_commands/${id}`)).body;
}

let sale = 0;
async function charge(terminal = terminalId) {
  const res = await call(posd!.url, key, 'POST', '/terminal_session_commands', {
    terminal_id: terminal,
    external_id: `nexo-${++sale}`,
    amount_in_cents: 12_345,
  });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

async function untilStatus(id: string, status: string, timeout = 20_000) {
  return until(
    `command ${id} ${status}`,
    async () => {
      const c = await command(id);
      return c.status === status ? c : undefined;
    },
    timeout,
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'posd-nexo-'));
  certs = makeNexoCertificates(dir, POIID);
  sim = await startNexoSimulator({ key: KEY, tls: { key: certs.key, cert: certs.cert }, poiid: POIID, slowMs: 3_000 });
  const inst = JSON.parse((await runPosd(['init', '--data', dir, '--json'])).stdout);
  key = inst.keys.test;
  terminalId = await addNexo(inst.sandbox_id, 'Caja nexo', KEY.passphrase);
  wrongKeyTerminalId = await addNexo(inst.sandbox_id, 'Caja mal configurada', 'another passphrase');
  env = {
    POSD_DATA: dir,
    POSD_HTTP_PORT: String(await freePort()),
    POSD_TERMINALS_NEXO_CA_FILE: certs.ca,
    POSD_TERMINALS_PING_INTERVAL_MS: '1000',
    POSD_TERMINALS_SERIAL_REOPEN_MAX_MS: '2000',
    POSD_LOG_LEVEL: 'info',
  };
  posd = await startPosd(env);
  await until(
    'the nexo terminal available',
    async () => (await call(posd!.url, key, 'GET', `/terminals/${terminalId}`)).body.availability === 'available',
    20_000,
  );
}, 180_000);

afterAll(async () => {
  if (posd) await kill9(posd);
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('lists the nexo terminal like the others, its passphrase sealed at rest', async () => {
  const t = (await call(posd!.url, key, 'GET', `/terminals/${terminalId}`)).body;
  expect(t).toMatchObject({ transport: 'nexo', nexo: { address: '127.0.0.1', port: sim.port, poiid: POIID }, model: 'V400m', serial_path: null });
  expect(JSON.stringify(t)).not.toContain(KEY.passphrase);
  const listed = await runPosd(['terminals', 'list', '--data', dir]);
  expect(listed.stdout).toContain(`${POIID} at 127.0.0.1:${sim.port}`);
  expect(readFileSync(join(dir, 'posd.db')).includes(Buffer.from(KEY.passphrase))).toBe(false);
});

it('registration: the manager only, a literal address, the passphrase never on the command line', async () => {
  const api = await call(posd!.url, key, 'POST', '/terminals', { name: 'Por API', transport: 'nexo' });
  expect(api.status).toBe(400);
  const base = [
    'terminals',
    'add',
    '--data',
    dir,
    '--account',
    'sbx_x',
    '--name',
    'X',
    '--kind',
    'nexo',
    '--poiid',
    POIID,
    '--key-identifier',
    'k',
    '--key-version',
    '1',
  ];
  const onArgv = await runPosd([...base, '--address', '127.0.0.1', '--passphrase', KEY.passphrase]);
  expect(onArgv.code).not.toBe(0);
  expect(onArgv.stderr).toMatch(/unknown option '--passphrase'/);
  const account = (await call(posd!.url, key, 'GET', `/terminals/${terminalId}`)).body.account_id;
  const named = await runPosd([...base.slice(0, 5), account, ...base.slice(6), '--address', 'terminal.local'], {}, 'secret\n');
  expect(named.code).not.toBe(0);
  expect(named.stderr).toMatch(/literal IPv4 or IPv6 address/);
});

it('approve: a PaymentRequest whose SaleTransactionID is the command id, settled once', async () => {
  sim.mode = 'approve';
  const c = await charge();
  const done = await untilStatus(c.id, 'consumed');
  expect(done.final).toBe(true);
  expect(sim.approvedCount(c.id)).toBe(1);
  const p = [...sim.payments.values()].find((x) => x.saleTransactionId === c.id)!;
  expect(p).toMatchObject({ amount: 123.45, stage: 'done' });
});

it('decline: the terminal refuses, the command fails', async () => {
  sim.mode = 'decline';
  const c = await charge();
  expect(await untilStatus(c.id, 'failed')).toMatchObject({ final: true });
  expect(sim.approvedCount(c.id)).toBe(0);
});

it('cancel while waiting for the card: 202, then canceled when the terminal answers Aborted', async () => {
  sim.mode = 'slow';
  // Long enough to wait for the card that the cancel lands before authorization, even under load.
  sim.slowMs = 12_000;
  const c = await charge();
  await sim.reached(c.id, 'waiting_card');
  await untilStatus(c.id, 'dispatched');
  const del = await call(posd!.url, key, 'DELETE', `/terminal_session_commands/${c.id}`);
  expect(del.status).toBe(202);
  expect(del.body.status).toBe('cancel_requested');
  expect(await untilStatus(c.id, 'canceled')).toMatchObject({ final: true });
  expect(sim.approvedCount(c.id)).toBe(0);
  sim.slowMs = 3_000;
});

it('cancel during authorization is not confirmed: the terminal approves, the command is consumed', async () => {
  sim.mode = 'slow';
  const c = await charge();
  await sim.reached(c.id, 'authorizing');
  const del = await call(posd!.url, key, 'DELETE', `/terminal_session_commands/${c.id}`);
  expect(del.status).toBe(202);
  expect((await command(c.id)).status).toBe('cancel_requested');
  const done = await untilStatus(c.id, 'consumed');
  expect(done.canceled_at).toBeNull();
  expect([...sim.payments.values()].find((x) => x.saleTransactionId === c.id)!.abortedTooLate).toBe(true);
  expect(sim.approvedCount(c.id)).toBe(1);
});

it('the connection dropped while authorizing: the answer is recovered by TransactionStatusRequest', async () => {
  sim.mode = 'drop';
  const before = sim.requests.TransactionStatus ?? 0;
  const c = await charge();
  await untilStatus(c.id, 'consumed');
  expect(sim.requests.TransactionStatus ?? 0).toBeGreaterThan(before);
  expect([...sim.payments.values()].filter((x) => x.saleTransactionId === c.id)).toHaveLength(1);
  expect(sim.approvedCount(c.id)).toBe(1);
});

it('posd killed mid-authorization: the restart recovers the payment by TransactionStatusRequest, no double charge', async () => {
  sim.mode = 'slow';
  const c = await charge();
  await sim.reached(c.id, 'authorizing');
  await kill9(posd!);
  // The terminal completes the payment while posd is gone.
  await sim.reached(c.id, 'done');
  const before = sim.requests.TransactionStatus ?? 0;
  posd = await startPosd(env);
  const done = await untilStatus(c.id, 'consumed');
  expect(done.final).toBe(true);
  expect(sim.requests.TransactionStatus ?? 0).toBeGreaterThan(before);
  expect([...sim.payments.values()].filter((x) => x.saleTransactionId === c.id)).toHaveLength(1);
  expect(sim.approvedCount(c.id)).toBe(1);
  // And the next sale goes as usual.
  sim.mode = 'approve';
  await untilStatus((await charge()).id, 'consumed');
}, 180_000);

it('a terminal holding another key is refused: unavailable, nothing offered', async () => {
  const c = await charge(wrongKeyTerminalId);
  // posd keeps trying to reach it; the terminal cannot open what it sends and says so in clear.
  const rejected = sim.rejected;
  await until('a message under the wrong key rejected', () => sim.rejected > rejected, 20_000);
  const t = (await call(posd!.url, key, 'GET', `/terminals/${wrongKeyTerminalId}`)).body;
  expect(t.availability).toBe('unavailable');
  expect(await command(c.id)).toMatchObject({ status: 'pending', final: false });
  expect([...sim.payments.values()].some((x) => x.saleTransactionId === c.id)).toBe(false);
  expect(await call(posd!.url, key, 'DELETE', `/terminal_session_commands/${c.id}`)).toMatchObject({ status: 200 });
});

it('health by DiagnosisRequest: a terminal that stops answering goes unavailable, and comes back', async () => {
  const availability = async () => (await call(posd!.url, key, 'GET', `/terminals/${terminalId}`)).body.availability;
  expect(await availability()).toBe('available');
  const port = sim.port;
  await sim.close();
  await until('the silent terminal unavailable', async () => (await availability()) === 'unavailable', 30_000);
  sim = await startNexoSimulator({ key: KEY, tls: { key: certs.key, cert: certs.cert }, poiid: POIID, port });
  await until('the terminal available again', async () => (await availability()) === 'available', 30_000);
  expect(sim.requests.Diagnosis).toBeGreaterThan(0);
  sim.mode = 'approve';
  await untilStatus((await charge()).id, 'consumed');
}, 90_000);
