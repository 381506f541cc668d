/**
 * Refunds of payments a nexo terminal took, carried out by that terminal: the built daemon drives
 * the nexo simulator (devices/simulator/nexo-simulator.ts) over real HTTPS, every message under
 * NexoCrypto. A referenced refund is a ReversalRequest naming the payment's POITransactionID; without
 * one, a PaymentRequest with PaymentType Refund. The refund follows the terminal's answer, a lost
 * answer is recovered by TransactionStatusRequest before anything is sent again, and no payment is
 * ever reversed twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startNexoSimulator, type NexoSimulator } from '../../devices/simulator/nexo-simulator.js';
import { runPosd } from '../helpers/process.js';
import { until } from '../helpers/until.js';
import { makeNexoCertificates } from './helpers/nexo-certs.js';
import { call, freePort, kill9, startPosd, type PosdProcess } from './helpers/posd-process.js';

const POIID = 'V400m-324688179';
const KEY = { keyIdentifier: 'posdrefund', passphrase: 'refunds go back to the card', keyVersion: 1 };

let dir: string;
let sim: NexoSimulator;
let posd: PosdProcess | undefined;
let env: Record<string, string>;
let key: string;
let terminalId: string;
let sale = 0;

const api = (method: string, path: string, body?: unknown) => call(posd!.url, key, method, path, body);

/** A charge approved on the terminal: its command, payment intent (by its unified id) and the terminal's POITransactionID. */
async function paidSale() {
  const c = await api('POST', '/terminal_session_commands', { terminal_id: terminalId, external_id: `refund-${++sale}`, amount_in_cents: 12_345 });
  expect(c.status).toBe(201);
  const done = await until(
    `command ${c.body.id} consumed`,
    async () => {
      const x = (await api('GET', `/terminal_session_commands/${c.body.id}`)).body;
      return x.status === 'consumed' ? x : undefined;
    },
    20_000,
  );
  const checkout = (await api('GET', `/checkouts/${done.checkout_id}`)).body;
  const payment = [...sim.payments.values()].find((p) => p.saleTransactionId === c.body.id)!;
  return { commandId: c.body.id as string, intentId: checkout.latest_intent.id as string, poi: payment.response?.POIData?.POITransactionID };
}

async function refund(intentId: string) {
  return api('POST', '/refunds', { intent_id: intentId });
}

async function untilRefund(id: string, status: string, timeout = 20_000) {
  return until(
    `refund ${id} ${status}`,
    async () => {
      const r = (await api('GET', `/refunds/${id}`)).body;
      return r.status === status ? r : undefined;
    },
    timeout,
  );
}

const reversalsOf = (refundId: string) => [...sim.reversals.values()].filter((r) => r.saleTransactionId === refundId);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'posd-nexo-refund-'));
  const certs = makeNexoCertificates(dir, POIID);
  sim = await startNexoSimulator({ key: KEY, tls: { key: certs.key, cert: certs.cert }, poiid: POIID });
  const inst = JSON.parse((await runPosd(['init', '--data', dir, '--json'])).stdout);
  key = inst.keys.test;
  const args = ['terminals', 'add', '--data', dir, '--account', inst.sandbox_id, '--name', 'Caja nexo', '--kind', 'nexo', '--address', '127.0.0.1'];
  args.push('--port', String(sim.port), '--poiid', POIID, '--key-identifier', KEY.keyIdentifier, '--key-version', String(KEY.keyVersion), '--json');
  const added = await runPosd(args, {}, `${KEY.passphrase}\n`);
  expect(added.code).toBe(0);
  terminalId = JSON.parse(added.stdout).id;
  env = {
    POSD_DATA: dir,
    POSD_HTTP_PORT: String(await freePort()),
    POSD_TERMINALS_NEXO_CA_FILE: certs.ca,
    POSD_TERMINALS_PING_INTERVAL_MS: '1000',
    POSD_TERMINALS_SERIAL_REOPEN_MAX_MS: '2000',
    // A request's answer awaited this long, then asked for by TransactionStatusRequest.
    POSD_TERMINALS_NEXO_PAYMENT_TIMEOUT_MS: '2000',
    POSD_LOG_LEVEL: 'info',
  };
  posd = await startPosd(env);
  await until('the nexo terminal available', async () => (await api('GET', `/terminals/${terminalId}`)).body.availability === 'available', 20_000);
}, 180_000);

afterAll(async () => {
  if (posd) await kill9(posd);
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('a referenced refund is a ReversalRequest naming the POITransactionID; it succeeds on the terminal, once', async () => {
  sim.reversalMode = 'approve';
  const paid = await paidSale();
  const created = await refund(paid.intentId);
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ status: 'pending', balance_transaction_id: null, amount_in_cents: 12_345 });
  const done = await untilRefund(created.body.id, 'succeeded');
  expect(done.balance_transaction_id).toMatch(/^txn_/);
  expect(done.failure_reason).toBeNull();
  const [reversal, ...more] = reversalsOf(created.body.id);
  expect(more).toHaveLength(0);
  expect(reversal).toMatchObject({ original: paid.poi!.TransactionID, originalAt: paid.poi!.TimeStamp, stage: 'done' });
  expect(sim.reversedCount(paid.poi!.TransactionID!)).toBe(1);
  // The refund moved the ledger once.
  const txn = (await api('GET', `/balance_transactions/${done.balance_transaction_id}`)).body;
  expect(txn).toMatchObject({ type: 'refund', amount_in_cents: -12_345 });
  const again = await refund(paid.intentId);
  expect(again.status).toBe(422);
  expect(again.body).toMatchObject({ code: 'already_refunded', refund_id: created.body.id });
});

it('a declined reversal fails the refund, nothing moved; asked again, the terminal is asked again', async () => {
  sim.reversalMode = 'decline';
  const paid = await paidSale();
  const created = await refund(paid.intentId);
  const failed = await untilRefund(created.body.id, 'failed');
  expect(failed).toMatchObject({ failure_reason: 'declined', balance_transaction_id: null });
  sim.reversalMode = 'approve';
  const retried = await refund(paid.intentId);
  expect(retried.body).toMatchObject({ id: created.body.id, status: 'pending' });
  await untilRefund(created.body.id, 'succeeded');
  const reversals = reversalsOf(created.body.id);
  expect(reversals).toHaveLength(2);
  expect(new Set(reversals.map((r) => r.serviceId)).size).toBe(2);
  expect(sim.reversedCount(paid.poi!.TransactionID!)).toBe(1);
});

it('the connection dropped mid-reversal: the answer is recovered by TransactionStatusRequest, not by a second reversal', async () => {
  sim.reversalMode = 'drop';
  const paid = await paidSale();
  const statusBefore = sim.requests.TransactionStatus ?? 0;
  const created = await refund(paid.intentId);
  await untilRefund(created.body.id, 'succeeded');
  expect(sim.requests.TransactionStatus ?? 0).toBeGreaterThan(statusBefore);
  expect(reversalsOf(created.body.id)).toHaveLength(1);
  expect(reversalsOf(created.body.id)[0].abandoned).toBe(true);
  expect(sim.reversedCount(paid.poi!.TransactionID!)).toBe(1);
});

it('no answer: the refund stays pending while the terminal says InProgress, then settles on its answer', async () => {
  sim.reversalMode = 'timeout';
  const paid = await paidSale();
  const created = await refund(paid.intentId);
  await sim.reachedReversal(created.body.id, 'processing');
  // posd gives the request up after nexo_payment_timeout_ms and asks, more than once.
  const statusBefore = sim.requests.TransactionStatus ?? 0;
  await until('two status requests', () => (sim.requests.TransactionStatus ?? 0) >= statusBefore + 2, 20_000);
  expect((await api('GET', `/refunds/${created.body.id}`)).body.status).toBe('pending');
  expect(reversalsOf(created.body.id)).toHaveLength(1);
  // The terminal may still carry the refund out: it cannot be retired meanwhile.
  const retire = await api('DELETE', `/terminals/${terminalId}`);
  expect(retire.status).toBe(409);
  expect(retire.body.code).toBe('terminal_busy');
  sim.completeReversal(created.body.id, 'approved');
  await untilRefund(created.body.id, 'succeeded');
  expect(reversalsOf(created.body.id)).toHaveLength(1);
  sim.reversalMode = 'approve';
});

it('a charge created while a refund is on the terminal is not sent until the refund settles, then charged once', async () => {
  sim.reversalMode = 'timeout';
  const paid = await paidSale();
  const created = await refund(paid.intentId);
  await sim.reachedReversal(created.body.id, 'processing');
  const c = await api('POST', '/terminal_session_commands', { terminal_id: terminalId, external_id: `refund-${++sale}`, amount_in_cents: 2_500 });
  expect(c.status).toBe(201);
  const requestsOf = () => [...sim.payments.values()].filter((p) => p.saleTransactionId === c.body.id);
  // The refund is asked for by status, more than once: the charge stays queued, never offered meanwhile.
  const statusBefore = sim.requests.TransactionStatus ?? 0;
  await until('two status requests', () => (sim.requests.TransactionStatus ?? 0) >= statusBefore + 2, 20_000);
  expect(requestsOf()).toHaveLength(0);
  expect((await api('GET', `/terminal_session_commands/${c.body.id}`)).body.status).toBe('pending');
  sim.completeReversal(created.body.id, 'approved');
  await untilRefund(created.body.id, 'succeeded');
  await until(`command ${c.body.id} consumed`, async () => (await api('GET', `/terminal_session_commands/${c.body.id}`)).body.status === 'consumed', 20_000);
  expect(requestsOf()).toHaveLength(1);
  expect(sim.approvedCount(c.body.id)).toBe(1);
  expect(reversalsOf(created.body.id)).toHaveLength(1);
  sim.reversalMode = 'approve';
});

it('posd killed mid-refund: the restart asks the terminal by TransactionStatusRequest; one reversal, one refund', async () => {
  sim.reversalMode = 'timeout';
  const paid = await paidSale();
  const created = await refund(paid.intentId);
  await sim.reachedReversal(created.body.id, 'processing');
  await kill9(posd!);
  // The terminal completes the reversal while posd is gone.
  sim.completeReversal(created.body.id, 'approved');
  const statusBefore = sim.requests.TransactionStatus ?? 0;
  const reversalsBefore = sim.requests.Reversal ?? 0;
  posd = await startPosd(env);
  const done = await untilRefund(created.body.id, 'succeeded', 30_000);
  expect(done.balance_transaction_id).toMatch(/^txn_/);
  expect(sim.requests.TransactionStatus ?? 0).toBeGreaterThan(statusBefore);
  expect(sim.requests.Reversal ?? 0).toBe(reversalsBefore);
  expect(reversalsOf(created.body.id)).toHaveLength(1);
  expect(sim.reversedCount(paid.poi!.TransactionID!)).toBe(1);
  sim.reversalMode = 'approve';
}, 120_000);

it('without the payment POITransactionID, an unreferenced refund: a PaymentRequest with PaymentType Refund', async () => {
  sim.withoutPoiTransaction = true;
  const paid = await paidSale();
  sim.withoutPoiTransaction = false;
  expect(paid.poi).toBeUndefined();
  const created = await refund(paid.intentId);
  expect(created.body.status).toBe('pending');
  await untilRefund(created.body.id, 'succeeded');
  const asked = [...sim.payments.values()].filter((p) => p.saleTransactionId === created.body.id);
  expect(asked).toHaveLength(1);
  expect(asked[0]).toMatchObject({ paymentType: 'Refund', amount: 123.45, stage: 'done' });
  expect(sim.approvedCount(created.body.id)).toBe(1);
  expect(reversalsOf(created.body.id)).toHaveLength(0);
});

it('a retired terminal refunds nothing: its payments answer 422 terminal_refund_unavailable', async () => {
  sim.reversalMode = 'decline';
  const unrefunded = await paidSale();
  const declined = await paidSale();
  const created = await refund(declined.intentId);
  await untilRefund(created.body.id, 'failed');
  expect((await api('DELETE', `/terminals/${terminalId}`)).status).toBe(200);
  for (const paid of [unrefunded, declined]) {
    const res = await refund(paid.intentId);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('terminal_refund_unavailable');
  }
  expect(reversalsOf(created.body.id)).toHaveLength(1);
  expect(sim.reversedCount(unrefunded.poi!.TransactionID!)).toBe(0);
});
