import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';

// Issue 15: a dispute (chargeback) opened on a succeeded card payment and moved to its outcome,
// through the sandbox test helpers over HTTP; each step's event is delivered (signature verified)
// with its shape, and the ledger `dispute` rows move the balance.

let s: TestServer;
const receiver = new Receiver();
let secret: string;

beforeAll(async () => {
  await receiver.start();
  s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
  const ep = await s.api('POST', '/webhook_endpoints', { body: { url: receiver.url } });
  expect(ep.status).toBe(201);
  secret = ep.body.signingSecret;
});
afterAll(async () => {
  await s.stop();
  await receiver.stop();
});

/** A succeeded card payment of `amount` cents through a checkout: its payment intent id. */
async function cardPayment(amount: number, method: 'card' | 'bank_transfer' = 'card'): Promise<string> {
  const co = await s.api('POST', '/checkouts', { body: { items: [{ name: 'Limpieza dental', amount_in_cents: amount, quantity: 1 }] } });
  expect(co.status).toBe(201);
  const paid = await s.api('POST', `/test_helpers/checkouts/${co.body.id}/pay`, { body: { method, outcome: 'succeeded' } });
  expect(paid.status, JSON.stringify(paid.body)).toBe(200);
  return paid.body.payment_intent_id;
}

async function available(): Promise<number> {
  const res = await s.api('GET', '/balances');
  expect(res.status).toBe(200);
  return res.body.find((b: { currency: string }) => b.currency === 'GTQ')?.available_in_cents ?? 0;
}

async function ledgerRow(id: string) {
  const res = await s.api('GET', `/balance_transactions/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

/** The events delivered since `from`, verified with the endpoint's secret, of one dispute. */
async function delivered(from: number, disputeId: string): Promise<Array<Record<string, any>>> {
  await deliveryWorkerOf(s.daemon.ctx)!.runDue();
  return receiver.received
    .slice(from)
    .map((r) => new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as Record<string, any>)
    .filter((b) => b.id === disputeId);
}

const DISPUTE_KEYS = [
  'event_type',
  'api_version',
  'id',
  'object',
  'account_id',
  'live_mode',
  'payment_intent_id',
  'intent_id',
  'status',
  'reason',
  'amount_in_cents',
  'currency',
  'balance_transaction_id',
  'reversal_balance_transaction_id',
  'created_at',
  'updated_at',
  'closed_at',
  'previous_status',
].sort();

describe('disputes on card payments', () => {
  it('opens a dispute: the amount is held back with a ledger dispute row, and dispute.create is delivered', async () => {
    const pa = await cardPayment(30_000);
    const before = await available();
    const from = receiver.received.length;
    const res = await s.api('POST', `/test_helpers/payment_intents/${pa}/dispute`, { body: { reason: 'fraudulent' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      object: 'dispute',
      status: 'needs_response',
      reason: 'fraudulent',
      payment_intent_id: pa,
      amount_in_cents: 30_000,
      currency: 'GTQ',
      live_mode: false,
      reversal_balance_transaction_id: null,
      closed_at: null,
    });
    expect(res.body.id).toMatch(/^dp_/);
    expect(await available()).toBe(before - 30_000);
    expect(await ledgerRow(res.body.balance_transaction_id)).toMatchObject({
      type: 'dispute',
      amount_in_cents: -30_000,
      fee_in_cents: 0,
      net_amount_in_cents: -30_000,
      source_id: res.body.id,
      source_type: 'dispute',
    });

    const [event, ...more] = await delivered(from, res.body.id);
    expect(more).toEqual([]);
    expect(Object.keys(event).sort()).toEqual(DISPUTE_KEYS);
    expect(event).toMatchObject({
      event_type: 'dispute.create',
      api_version: '2023-04-01',
      status: 'needs_response',
      previous_status: null,
      account_id: s.installation.sandbox_id,
      amount_in_cents: 30_000,
      balance_transaction_id: res.body.balance_transaction_id,
    });

    // A payment is disputed once, and a disputed payment is not refunded too.
    const again = await s.api('POST', `/test_helpers/payment_intents/${pa}/dispute`, { body: {} });
    expect([again.status, again.body.code]).toEqual([422, 'already_disputed']);
    const refund = await s.api('POST', '/refunds', { body: { payment_intent_id: pa } });
    expect([refund.status, refund.body.code]).toEqual([422, 'payment_disputed']);
    expect(await available()).toBe(before - 30_000);
  });

  it('is won after review: dispute.update at each step, and a positive dispute row gives the money back', async () => {
    const pa = await cardPayment(12_000);
    const before = await available();
    const from = receiver.received.length;
    const opened = (await s.api('POST', `/test_helpers/payment_intents/${pa}/dispute`, { body: { reason: 'product_not_received', amount_in_cents: 5_000 } }))
      .body;
    expect(await available()).toBe(before - 5_000);
    const review = await s.api('POST', `/test_helpers/disputes/${opened.id}/advance`, { body: { outcome: 'under_review' } });
    expect(review.status).toBe(200);
    expect(review.body).toMatchObject({ status: 'under_review', closed_at: null });
    expect(await available()).toBe(before - 5_000);
    const won = await s.api('POST', `/test_helpers/disputes/${opened.id}/advance`, { body: { outcome: 'won' } });
    expect(won.status).toBe(200);
    expect(won.body).toMatchObject({ status: 'won', amount_in_cents: 5_000 });
    expect(won.body.closed_at).not.toBeNull();
    expect(await ledgerRow(won.body.reversal_balance_transaction_id)).toMatchObject({ type: 'dispute', amount_in_cents: 5_000, source_id: opened.id });
    expect(await available()).toBe(before);

    const events = await delivered(from, opened.id);
    expect(events.map((e) => [e.event_type, e.previous_status, e.status])).toEqual([
      ['dispute.create', null, 'needs_response'],
      ['dispute.update', 'needs_response', 'under_review'],
      ['dispute.update', 'under_review', 'won'],
    ]);
    for (const e of events) expect(Object.keys(e).sort()).toEqual(DISPUTE_KEYS);
    expect(events[2].reversal_balance_transaction_id).toBe(won.body.reversal_balance_transaction_id);

    const late = await s.api('POST', `/test_helpers/disputes/${opened.id}/advance`, { body: { outcome: 'lost' } });
    expect([late.status, late.body.code]).toEqual([422, 'dispute_final']);
  });

  it('is lost: the money stays debited, no second row', async () => {
    const pa = await cardPayment(7_000);
    const before = await available();
    const from = receiver.received.length;
    const opened = (await s.api('POST', `/test_helpers/payment_intents/${pa}/dispute`, { body: {} })).body;
    expect(opened.reason).toBe('general');
    const lost = await s.api('POST', `/test_helpers/disputes/${opened.id}/advance`, { body: { outcome: 'lost' } });
    expect(lost.body).toMatchObject({ status: 'lost', reversal_balance_transaction_id: null });
    expect(await available()).toBe(before - 7_000);
    const rows = await s.api('GET', '/balance_transactions?type=dispute');
    expect(rows.body.filter((r: { source_id: string }) => r.source_id === opened.id)).toHaveLength(1);
    const events = await delivered(from, opened.id);
    expect(events.map((e) => [e.event_type, e.status])).toEqual([
      ['dispute.create', 'needs_response'],
      ['dispute.update', 'lost'],
    ]);
  });

  it('refuses what a card network cannot dispute, unknown fields, and live keys', async () => {
    const transfer = await cardPayment(4_000, 'bank_transfer');
    const res = await s.api('POST', `/test_helpers/payment_intents/${transfer}/dispute`, { body: {} });
    expect([res.status, res.body.code]).toEqual([422, 'payment_not_disputable']);
    const pa = await cardPayment(4_000);
    const tooMuch = await s.api('POST', `/test_helpers/payment_intents/${pa}/dispute`, { body: { amount_in_cents: 4_001 } });
    expect([tooMuch.status, Object.keys(tooMuch.body.errors ?? {})]).toEqual([400, ['amount_in_cents']]);
    const unknown = await s.api('POST', `/test_helpers/payment_intents/${pa}/dispute`, { body: { evidence: 'x' } });
    expect([unknown.status, unknown.body.code]).toEqual([400, 'unknown_parameter']);
    expect((await s.api('POST', '/test_helpers/payment_intents/pa_nope/dispute', { body: {} })).status).toBe(404);
    const live = await s.api('POST', `/test_helpers/payment_intents/${pa}/dispute`, { key: s.installation.keys.live, body: {} });
    expect([live.status, live.body.code]).toEqual([404, 'route_not_found']);
    const count = (s.daemon.ctx.db.prepare('SELECT count(*) AS n FROM disputes WHERE payment_intent_id = ?').get(pa) as { n: number }).n;
    expect(count).toBe(0);
  });
});
