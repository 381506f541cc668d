/**
 * Stored payments on the nexo transport: the simulator in `offline` mode approves offline
 * (`offline=true` in the PaymentResponse's AdditionalResponse, as Adyen's terminals report it), posd
 * records a stored payment through protocol 2's path, and learns its outcome by asking the
 * terminal (TransactionStatusRequest) until the kept answer is no longer offline. Over real HTTPS
 * with a test CA, every message under NexoCrypto (test/terminals/helpers/nexo-harness.ts); and the
 * built daemon killed while the terminal approves offline, recovered at restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startNexoSimulator } from '../../devices/simulator/nexo-simulator.js';
import { accountsOf } from '../../src/accounts/service.js';
import { tx } from '../../src/db/database.js';
import { alertConditions } from '../../src/modules/ops/alerts.js';
import { setTerminalCaps } from '../../src/modules/terminals/stored/changes.js';
import { flaggedStoredPayments, storedPaymentOfCommand } from '../../src/modules/terminals/stored/service.js';
import { runPosd } from '../helpers/process.js';
import { until } from '../helpers/until.js';
import { makeNexoCertificates } from './helpers/nexo-certs.js';
import { NEXO_POIID, startNexoHarness, type NexoHarness } from './helpers/nexo-harness.js';
import { call, freePort, kill9, startPosd, type PosdProcess } from './helpers/posd-process.js';

let h: NexoHarness | undefined;
const cleanup: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  await h?.stop();
  h = undefined;
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function untilStatus(id: string, status: string) {
  return until(
    `command ${id} ${status}`,
    async () => {
      const c = await h!.get(id);
      return c.status === status ? c : undefined;
    },
    20_000,
  );
}

async function storeOne(): Promise<string> {
  const created = await h!.charge();
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  const cmd = await untilStatus(id, 'stored');
  // Not final for the till: the card may still be declined.
  expect(cmd).toMatchObject({ final: false, checkout_status: 'payment_in_progress' });
  return id;
}

it('an offline approval becomes a stored payment; the forward the terminal later reports approves it', async () => {
  h = await startNexoHarness({ mode: 'offline', terminals: { nexo_stored_poll_ms: 200 } });
  const ctx = h.server.daemon.ctx;
  const id = await storeOne();
  const [payment] = h.paymentsOf(id);
  const sp = storedPaymentOfCommand(ctx, id)!;
  expect(sp).toMatchObject({ status: 'stored', amount_in_cents: 1500, currency: 'GTQ', card_network: 'mc', card_last4: '9999', over_cap: null });
  // The terminal's own reference names it: its POI transaction id.
  expect(sp.offline_reference).toBe(payment.response!.POIData!.POITransactionID!.TransactionID);
  const listed = await h.server.api('GET', `/stored_payments?terminal_id=${h.terminalId}`);
  expect(listed.body.map((p: { id: string }) => p.id)).toEqual([sp.id]);
  // Still only stored on the terminal: the status polls change nothing.
  const asked = h.sim.requests.TransactionStatus ?? 0;
  await until('posd asking the terminal about it', () => (h!.sim.requests.TransactionStatus ?? 0) >= asked + 2);
  expect(storedPaymentOfCommand(ctx, id)!.status).toBe('stored');

  h.sim.forward(id, 'approved');
  const done = await untilStatus(id, 'consumed');
  expect(done).toMatchObject({ final: true, checkout_status: 'paid' });
  const settled = storedPaymentOfCommand(ctx, id)!;
  expect(settled).toMatchObject({ status: 'approved', final: 1 });
  expect(settled.forwarded_at).not.toBeNull();
  expect(settled.authorization_code).toMatch(/^\d{6}$/);
  // One PaymentRequest, one approval: nothing was charged twice.
  expect(h.sim.requests.Payment).toBe(1);
  expect(h.sim.approvedCount(id)).toBe(1);
});

it('a stored payment the processor refuses when forwarded fails, and the sale is owed again', async () => {
  h = await startNexoHarness({ mode: 'offline', terminals: { nexo_stored_poll_ms: 200 } });
  const ctx = h.server.daemon.ctx;
  const id = await storeOne();
  h.sim.forward(id, 'declined');
  const failed = await untilStatus(id, 'failed');
  expect(failed).toMatchObject({ final: true, checkout_status: 'unpaid' });
  expect(storedPaymentOfCommand(ctx, id)).toMatchObject({ status: 'declined', final: 1, reason: 'declined' });
  const owed = await h.server.api('GET', '/to_collect');
  expect(owed.body.map((r: { command_id: string }) => r.command_id)).toContain(id);
});

it("an offline approval over posd's caps is kept, flagged and alerted: the nexo terminal never heard them", async () => {
  h = await startNexoHarness({ mode: 'offline', terminals: { nexo_stored_poll_ms: 200 } });
  const ctx = h.server.daemon.ctx;
  const account = accountsOf(ctx).account(h.server.installation.sandbox_id)!;
  // GTQ 10.00 per payment on this terminal; the charge is GTQ 15.00.
  tx(ctx.db, () => setTerminalCaps(ctx, account, h!.terminalId, { max_payment_in_cents: 1000 }, { actor: 'maria', reason: 'small float' }));
  expect(alertConditions(ctx, ctx.clock.now()).map((c) => c.key)).not.toContain('stored:over_cap');
  const id = await storeOne();
  const [flagged] = flaggedStoredPayments(ctx, account);
  expect(flagged).toMatchObject({ command_id: id, status: 'stored' });
  expect(JSON.parse(flagged.over_cap!)).toEqual(['max_payment']);
  const alert = alertConditions(ctx, ctx.clock.now()).find((c) => c.key === 'stored:over_cap');
  expect(alert?.problem).toContain(flagged.id);
  expect(alert?.problem).toContain('max_payment');
  // Its outcome still reaches it; once final, the condition clears.
  h.sim.forward(id, 'approved');
  await untilStatus(id, 'consumed');
  expect(alertConditions(ctx, ctx.clock.now()).map((c) => c.key)).not.toContain('stored:over_cap');
});

it('posd killed while the terminal approves offline: the restart recovers a stored payment by TransactionStatusRequest', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'posd-nexo-stored-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const certs = makeNexoCertificates(dir, NEXO_POIID);
  const key = { keyIdentifier: 'posdstored', passphrase: 'stored while posd was gone', keyVersion: 1 };
  const sim = await startNexoSimulator({ key, tls: { key: certs.key, cert: certs.cert }, poiid: NEXO_POIID, mode: 'manual' });
  cleanup.push(() => sim.close());
  const inst = JSON.parse((await runPosd(['init', '--data', dir, '--json'])).stdout);
  const args = ['terminals', 'add', '--data', dir, '--account', inst.sandbox_id, '--name', 'Caja', '--kind', 'nexo', '--address', '127.0.0.1'];
  args.push('--port', String(sim.port), '--poiid', NEXO_POIID, '--key-identifier', key.keyIdentifier, '--key-version', '1', '--json');
  const terminalId = JSON.parse((await runPosd(args, {}, `${key.passphrase}\n`)).stdout).id as string;
  const env = {
    POSD_DATA: dir,
    POSD_HTTP_PORT: String(await freePort()),
    POSD_TERMINALS_NEXO_CA_FILE: certs.ca,
    POSD_TERMINALS_NEXO_STORED_POLL_MS: '300',
  };
  let posd: PosdProcess | undefined = await startPosd(env);
  cleanup.push(async () => {
    if (posd) await kill9(posd);
  });
  const api = (method: string, path: string, body?: unknown) => call(posd!.url, inst.keys.test, method, path, body);
  await until('the terminal available', async () => (await api('GET', `/terminals/${terminalId}`)).body.availability === 'available', 20_000);
  const id = (await api('POST', '/terminal_session_commands', { terminal_id: terminalId, external_id: 'offline-kill', amount_in_cents: 4200 })).body.id;
  await sim.reached(id, 'waiting_card');
  sim.authorize(id);
  await kill9(posd);
  posd = undefined;
  // While posd is gone the terminal cannot reach its processor either, and approves offline.
  sim.mode = 'offline';
  sim.complete(id, 'approved');
  posd = await startPosd(env);
  const stored = await until(
    'the command stored',
    async () => {
      const c = (await api('GET', `/terminal_session_commands/${id}`)).body;
      return c.status === 'stored' ? c : undefined;
    },
    20_000,
  );
  expect(stored.final).toBe(false);
  const [sp] = (await api('GET', `/stored_payments?terminal_id=${terminalId}`)).body;
  expect(sp).toMatchObject({ command_id: id, status: 'stored', amount_in_cents: 4200 });
  expect(sim.requests.Payment).toBe(1);
  sim.forward(id, 'approved');
  await until('the command consumed', async () => (await api('GET', `/terminal_session_commands/${id}`)).body.status === 'consumed', 20_000);
  expect((await api('GET', `/stored_payments/${sp.id}`)).body).toMatchObject({ status: 'approved' });
  expect(sim.approvedCount(id)).toBe(1);
}, 120_000);
