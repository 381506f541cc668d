import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';
import { AccountsService } from '../../src/accounts/service.js';

// Issue 15: a bank-transfer payment waits for the money. Starting it emits intent.pending (and
// bank_transfer_intent.pending to an account that gets both formats); the bank's notice settles it
// (intent.succeeded and a ledger charge) or, when short, fails it (intent.failed, nothing posted);
// the payer giving up cancels it (intent.canceled). Real daemon, real receivers, signatures verified.

let s: TestServer;
const unifiedR = new Receiver();
const bothR = new Receiver();
let both: { id: string; key: string };
const secrets: Record<string, string> = {};

beforeAll(async () => {
  await unifiedR.start();
  await bothR.start();
  s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
  secrets.unified = (await s.api('POST', '/webhook_endpoints', { body: { url: unifiedR.url } })).body.signingSecret;
  // A second sandbox set to receive both formats, as a live account older than events.unified_since does.
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  const made = accounts.createAccount({ name: 'Older', organizationId: s.installation.organization_id });
  s.daemon.ctx.db.prepare(`UPDATE accounts SET event_format = 'both' WHERE id = ?`).run(made.sandbox.id);
  both = { id: made.sandbox.id, key: accounts.createKey({ accountId: made.sandbox.id, environment: 'test' }).key };
  secrets.both = (await s.api('POST', '/webhook_endpoints', { key: both.key, body: { url: bothR.url } })).body.signingSecret;
});
afterAll(async () => {
  await s.stop();
  await unifiedR.stop();
  await bothR.stop();
});

async function deliveredSince(r: Receiver, secret: string, from: number): Promise<Array<Record<string, any>>> {
  await deliveryWorkerOf(s.daemon.ctx)!.runDue();
  return r.received.slice(from).map((x) => new Webhook(secret).verify(x.body, x.headers as Record<string, string>) as Record<string, any>);
}

async function pendingTransfer(key?: string, amount = 30000) {
  const ch = await s.api('POST', '/checkouts', { key, body: { items: [{ name: 'Tratamiento', amount_in_cents: amount, quantity: 1 }] } });
  expect(ch.status).toBe(201);
  const started = await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pending`, { key, body: { method: 'bank_transfer' } });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  expect(started.body).toMatchObject({ status: 'payment_in_progress', payment_intent_id: expect.stringMatching(/^pa_/) });
  return started.body as { id: string; payment_intent_id: string; latest_intent: { id: string } };
}

const ledgerCount = () => (s.daemon.ctx.db.prepare("SELECT count(*) AS n FROM balance_transactions WHERE type = 'charge'").get() as { n: number }).n;

describe('bank transfers that wait for the money', () => {
  it('pending when it starts; succeeded with a ledger charge when all of it arrives', async () => {
    const from = unifiedR.received.length;
    const checkout = await pendingTransfer();
    const pa = await s.api('GET', `/payment_intents/${checkout.payment_intent_id}`);
    expect(pa.body).toMatchObject({ status: 'pending', method: 'bank_transfer', amount_in_cents: 30000, balance_transaction_id: null });
    const intent = await s.api('GET', `/intents/${pa.body.intent_id}`);
    expect(intent.body).toMatchObject({ status: 'pending', type: 'bank_transfer', raw_status: 'awaiting_funds' });
    const pending = await deliveredSince(unifiedR, secrets.unified, from);
    expect(pending.map((e) => e.event_type)).toEqual(['intent.pending']);
    expect(pending[0]).toMatchObject({
      id: pa.body.intent_id,
      type: 'bank_transfer',
      status: 'pending',
      checkout: { id: checkout.id, status: 'payment_in_progress' },
    });

    // Asking again while it waits answers the same payment.
    expect((await s.api('POST', `/test_helpers/checkouts/${checkout.id}/pending`, { body: { method: 'bank_transfer' } })).body.payment_intent_id).toBe(
      pa.body.id,
    );

    const charges = ledgerCount();
    const arrived = await s.api('POST', `/test_helpers/payment_intents/${pa.body.id}/receive_transfer`, {
      body: { amount_in_cents: 30000, bank_reference: 'BI-778899', sender_comment: 'Factura 12' },
    });
    expect(arrived.status, JSON.stringify(arrived.body)).toBe(200);
    expect(arrived.body).toMatchObject({ status: 'succeeded', processor_reference: 'BI-778899', balance_transaction_id: expect.stringMatching(/^txn_/) });
    expect(arrived.body.fee_in_cents).not.toBe(0);
    expect(ledgerCount()).toBe(charges + 1);
    expect((await s.api('GET', `/checkouts/${checkout.id}`)).body.status).toBe('paid');
    const done = await deliveredSince(unifiedR, secrets.unified, from + 1);
    expect(done.map((e) => e.event_type)).toEqual(['intent.succeeded']);
    expect(done[0]).toMatchObject({
      id: pa.body.intent_id,
      status: 'succeeded',
      details: { bank_reference: 'BI-778899', sender_comment: 'Factura 12', failure_reason: null },
    });

    // A repeated notice changes nothing.
    const again = await s.api('POST', `/test_helpers/payment_intents/${pa.body.id}/receive_transfer`, { body: { amount_in_cents: 30000 } });
    expect(again.body.status).toBe('succeeded');
    expect(ledgerCount()).toBe(charges + 1);
    expect(await deliveredSince(unifiedR, secrets.unified, from + 2)).toEqual([]);
  });

  it('failed when it arrives short: nothing posted, the checkout failed; both formats where the account gets both', async () => {
    const from = bothR.received.length;
    const checkout = await pendingTransfer(both.key, 50000);
    const charges = ledgerCount();
    const short = await s.api('POST', `/test_helpers/payment_intents/${checkout.payment_intent_id}/receive_transfer`, {
      key: both.key,
      body: { amount_in_cents: 49999 },
    });
    expect(short.body).toMatchObject({ status: 'failed', failure_reason: 'amount_short', balance_transaction_id: null, fee_in_cents: 0 });
    expect(ledgerCount()).toBe(charges);
    expect((await s.api('GET', `/checkouts/${checkout.id}`, { key: both.key })).body.status).toBe('failed');
    const got = await deliveredSince(bothR, secrets.both, from);
    expect(got.map((e) => e.event_type)).toEqual(['intent.pending', 'bank_transfer_intent.pending', 'intent.failed', 'bank_transfer_intent.failed']);
    expect(got[1]).toMatchObject({ id: checkout.payment_intent_id, checkout: { id: checkout.id } });
    expect(got[2]).toMatchObject({ status: 'failed', details: { failure_reason: 'amount_short' } });
    expect(got[3]).toMatchObject({ id: checkout.payment_intent_id, failure_reason: 'amount_short', fee: 0 });
  });

  it('canceled when the payer gives up: intent.canceled, the checkout unpaid again and payable another way', async () => {
    const from = bothR.received.length;
    const checkout = await pendingTransfer(both.key);
    const abandoned = await s.api('POST', `/test_helpers/checkouts/${checkout.id}/abandon`, { key: both.key });
    expect(abandoned.body.status).toBe('unpaid');
    expect((await s.api('GET', `/payment_intents/${checkout.payment_intent_id}`, { key: both.key })).body.status).toBe('canceled');
    // The legacy bank-transfer family has no canceled event: only the unified one.
    const got = await deliveredSince(bothR, secrets.both, from);
    expect(got.map((e) => e.event_type)).toEqual(['intent.pending', 'bank_transfer_intent.pending', 'intent.canceled']);
    expect(got[2]).toMatchObject({ status: 'canceled', type: 'bank_transfer', checkout: { id: checkout.id, status: 'unpaid' } });
    // A notice after the cancel changes nothing.
    expect(
      (await s.api('POST', `/test_helpers/payment_intents/${checkout.payment_intent_id}/receive_transfer`, { key: both.key, body: { amount_in_cents: 30000 } }))
        .body.status,
    ).toBe('canceled');

    // Started again and then paid by card: the waiting transfer is canceled first.
    const again = await s.api('POST', `/test_helpers/checkouts/${checkout.id}/pending`, { key: both.key, body: { method: 'bank_transfer' } });
    const card = await s.api('POST', `/test_helpers/checkouts/${checkout.id}/pay`, { key: both.key, body: { method: 'card', outcome: 'succeeded' } });
    expect(card.body.status).toBe('succeeded');
    expect((await s.api('GET', `/payment_intents/${again.body.payment_intent_id}`, { key: both.key })).body.status).toBe('canceled');
    const after = await deliveredSince(bothR, secrets.both, from + 3);
    expect(after.map((e) => e.event_type)).toEqual([
      'intent.pending',
      'bank_transfer_intent.pending',
      'intent.canceled',
      'intent.succeeded',
      'payment_intent.succeeded',
    ]);
  });

  it('is a sandbox helper: a live key gets the unknown-route 404', async () => {
    const res = await s.api('POST', '/test_helpers/payment_intents/pa_x/receive_transfer', { key: s.installation.keys.live, body: { amount_in_cents: 1 } });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('route_not_found');
  });
});
