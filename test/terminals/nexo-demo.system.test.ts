/**
 * docs/terminals-nexo.md's demo walk-through, run as written: the block is read from the page and
 * run by bash, unchanged, in the project folder (the built daemon, bin/posd-nexo-sim, real
 * processes, real files, real ports). Its temp folder is made inside one this test removes.
 * And the simulator's command line in `offline` mode: an offline approval, forwarded on SIGUSR2.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { accountsOf } from '../../src/accounts/service.js';
import { createNexoTerminal } from '../../src/modules/terminals/service.js';
import { storedPaymentOfCommand } from '../../src/modules/terminals/stored/service.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { runBash, walkthrough } from '../helpers/walkthrough.js';
import { FAST_TERMINALS } from './helpers/harness.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

it('the demo walk-through runs as written: the simulated terminal registered as it printed takes a card sale', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'posd-nexo-demo-'));
  cleanup.push(() => rmSync(tmp, { recursive: true, force: true }));
  const { code, out } = await runBash(walkthrough('docs/terminals-nexo.md', 'nexo-demo'), 90_000, { ...process.env, TMPDIR: tmp });
  expect(code, out).toBe(0);
  // What it printed is what the block then ran.
  expect(out).toMatch(/posd terminals add --account <account id> --name "Demo terminal" --kind nexo --address 127\.0\.0\.1 --port 18443/);
  expect(out).toMatch(/terminals\.nexo_ca_file = \S+\/nexo\/ca\.pem/);
  const command = JSON.parse(out.split('\n').find((l) => l.startsWith('{"id":"tsc_'))!);
  expect(command).toMatchObject({ status: 'consumed', final: true, amount_in_cents: 2500, checkout_status: 'paid' });
  const done = JSON.parse(out.trim().split('\n').at(-1)!);
  expect(done).toMatchObject({ event: 'payment_done', sale_transaction_id: command.id, outcome: 'approved', amount: 25, currency: 'GTQ' });
}, 120_000);

it('posd-nexo-sim --mode offline approves offline; SIGUSR2 forwards, and posd learns it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'posd-nexo-sim-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const poiid = 'V400m-000000002';
  const key = { keyIdentifier: 'demo', passphrase: 'offline demo', keyVersion: 2 };
  writeFileSync(join(dir, 'key.txt'), `${key.passphrase}\n`);
  const args = ['--poiid', poiid, '--key-identifier', key.keyIdentifier, '--key-version', '2', '--passphrase-file', join(dir, 'key.txt')];
  const sim: ChildProcess = spawn('bin/posd-nexo-sim', [...args, '--tls-dir', join(dir, 'tls'), '--port', '0', '--mode', 'offline'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanup.push(() => {
    sim.kill('SIGTERM');
  });
  let out = '';
  sim.stdout!.on('data', (d) => (out += d));
  const port = Number((await until('the simulator listening', () => /listening on https:\/\/127\.0\.0\.1:(\d+)\//.exec(out)))[1]);

  const server: TestServer = await startTestServer({
    config: { terminals: { ...FAST_TERMINALS, nexo_ca_file: join(dir, 'tls', 'ca.pem'), nexo_stored_poll_ms: 200 } },
  });
  cleanup.push(() => server.stop());
  const ctx = server.daemon.ctx;
  const account = accountsOf(ctx).account(server.installation.sandbox_id)!;
  const terminal = createNexoTerminal(ctx, account, { name: 'Demo', address: '127.0.0.1', port, poiid, ...key });
  await until('the terminal available', async () => (await server.api('GET', `/terminals/${terminal.id}`)).body.availability === 'available', 20_000);
  const created = await server.api('POST', '/terminal_session_commands', {
    body: { terminal_id: terminal.id, external_id: 'offline-1', amount_in_cents: 2500 },
  });
  const id = created.body.id as string;
  await until('stored', async () => (await server.api('GET', `/terminal_session_commands/${id}`)).body.status === 'stored', 20_000);
  // The simulator prints what it saw every 100 ms, so posd may hold the answer before the pipe does.
  await until('the payment printed', () => out.includes(`"sale_transaction_id":"${id}"`));
  await until('the offline approval printed', () => /"event":"payment_done".*"outcome":"approved_offline"/.test(out));

  sim.kill('SIGUSR2');
  await until('consumed', async () => (await server.api('GET', `/terminal_session_commands/${id}`)).body.status === 'consumed', 20_000);
  expect(storedPaymentOfCommand(ctx, id)).toMatchObject({ status: 'approved' });
  await until('the forward printed', () => /"outcome":"forwarded_approved"/.test(out));
}, 90_000);
