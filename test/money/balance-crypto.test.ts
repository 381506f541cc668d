import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';
import { AccountsService } from '../../src/accounts/service.js';

// Issue 15: a checkout paid from another account's balance (intent.succeeded type balance and
// balance_intent.succeeded to the merchant, intent.paid to the payer, the payer debited and the
// merchant credited), and a crypto payment waiting for its on-chain confirmation (intent.pending,
// crypto_intent.*, a ledger charge on success). Real daemon over HTTP, real receivers, signatures verified.

let s: TestServer;
const merchantR = new Receiver();
const payerR = new Receiver();
let merchant: { id: string; key: string };
let payer: { id: string; key: string };
const secrets: Record<string, string> = {};

beforeAll(async () => {
  await merchantR.start();
  await payerR.start();
  s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  // The merchant gets both formats (as a live account older than events.unified_since), the payer the unified one.
  const m = accounts.createAccount({ name: 'Clínica Sonrisa', organizationId: s.installation.organization_id });
  s.daemon.ctx.db.prepare(`UPDATE accounts SET event_format = 'both' WHERE id = ?`).run(m.sandbox.id);
  merchant = { id: m.sandbox.id, key: accounts.createKey({ accountId: m.sandbox.id, environment: 'test' }).key };
  const p = accounts.createAccount({ name: 'Farmacia Central', organizationId: s.installation.organization_id });
  payer = { id: p.sandbox.id, key: accounts.createKey({ accountId: p.sandbox.id, environment: 'test' }).key };
  secrets.merchant = (await s.api('POST', '/webhook_endpoints', { key: merchant.key, body: { url: merchantR.url } })).body.signingSecret;
  secrets.payer = (await s.api('POST', '/webhook_endpoints', { key: payer.key, body: { url: payerR.url } })).body.signingSecret;
});
afterAll(async () => {
  await s.stop();
  await merchantR.stop();
  await payerR.stop();
});

async function deliveredSince(r: Receiver, secret: string, from: number): Promise<Array<Record<string, any>>> {
  await deliveryWorkerOf(s.daemon.ctx)!.runDue();
  return r.received.slice(from).map((x) => new Webhook(secret).verify(x.body, x.headers as Record<string, string>) as Record<string, any>);
}

async function checkout(key: string, amount: number): Promise<string> {
  const ch = await s.api('POST', '/checkouts', { key, body: { items: [{ name: 'Tratamiento', amount_in_cents: amount, quantity: 1 }] } });
  expect(ch.status, JSON.stringify(ch.body)).toBe(201);
  return ch.body.id;
}

async function balance(key: string, currency = 'GTQ'): Promise<number> {
  const r = await s.api('GET', '/balances', { key });
  expect(r.status).toBe(200);
  return r.body.find((b: { currency: string }) => b.currency === currency)?.available_in_cents ?? 0;
}

describe('balance payments', () => {
  it('debits the payer, credits the merchant (fee taken), intent.succeeded + balance_intent.succeeded to the merchant, intent.paid to the payer', async () => {
    // The payer earns its balance by a card sale of its own.
    const own = await checkout(payer.key, 50000);
    expect((await s.api('POST', `/test_helpers/checkouts/${own}/pay`, { key: payer.key, body: { method: 'card', outcome: 'succeeded' } })).status).toBe(200);
    const payerBefore = await balance(payer.key);
    const merchantBefore = await balance(merchant.key);
    expect(payerBefore).toBeGreaterThan(30000);
    const fromM = merchantR.received.length;
    const fromP = payerR.received.length;

    const ch = await checkout(merchant.key, 30000);
    const paid = await s.api('POST', `/test_helpers/checkouts/${ch}/pay_with_balance`, { key: merchant.key, body: { payer_account_id: payer.id } });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body).toMatchObject({
      status: 'succeeded',
      payment_intent_id: expect.stringMatching(/^pa_/),
      balance_transaction_id: expect.stringMatching(/^txn_/),
    });

    const pa = (await s.api('GET', `/payment_intents/${paid.body.payment_intent_id}`, { key: merchant.key })).body;
    expect(pa).toMatchObject({ method: 'balance', status: 'succeeded', amount_in_cents: 30000 });
    expect(pa.fee_in_cents).toBeLessThan(0);
    expect((await s.api('GET', `/checkouts/${ch}`, { key: merchant.key })).body.status).toBe('paid');

    // Ledger: the merchant's charge (gross, fee, net) and the payer's debit of the whole amount.
    const mRows = (await s.api('GET', '/balance_transactions', { key: merchant.key })).body;
    expect(mRows[0]).toMatchObject({
      id: paid.body.balance_transaction_id,
      type: 'charge',
      amount_in_cents: 30000,
      fee_in_cents: pa.fee_in_cents,
      source_id: pa.id,
    });
    const pRows = (await s.api('GET', '/balance_transactions', { key: payer.key })).body;
    expect(pRows[0]).toMatchObject({ type: 'payment', amount_in_cents: -30000, fee_in_cents: 0, net_amount_in_cents: -30000, source_id: pa.id });
    expect((await s.api('GET', '/balance_transactions?type=payment', { key: payer.key })).body).toHaveLength(1);
    expect(await balance(payer.key)).toBe(payerBefore - 30000);
    expect(await balance(merchant.key)).toBe(merchantBefore + 30000 + pa.fee_in_cents);

    const m = await deliveredSince(merchantR, secrets.merchant, fromM);
    expect(m.map((e) => e.event_type)).toEqual(['intent.succeeded', 'balance_intent.succeeded']);
    expect(m[0]).toMatchObject({
      id: pa.intent_id,
      type: 'balance',
      status: 'succeeded',
      legacy_id: pa.id,
      account_id: merchant.id,
      checkout: { id: ch, status: 'paid' },
    });
    // The events carry the fee as the card payments' do (the payment intent's fee_in_cents, negated).
    expect(m[0].details).toMatchObject({ fee: -pa.fee_in_cents, payer_account_id: payer.id, merchant_account_id: merchant.id, failure_reason: null });
    expect(m[1]).toMatchObject({ id: pa.id, fee: -pa.fee_in_cents, checkout: { id: ch, payment_method: { type: 'balance', card: null } } });
    const p = await deliveredSince(payerR, secrets.payer, fromP);
    expect(p.map((e) => e.event_type)).toEqual(['intent.paid']);
    expect(p[0]).toMatchObject({ type: 'balance', status: 'paid', account_id: payer.id, amount_in_cents: 30000, checkout: { id: ch, status: 'paid' } });
    expect(p[0].details).toMatchObject({ fee: 0, payer_account_id: payer.id, merchant_account_id: merchant.id });
    // The payer reads its own side of the charge.
    expect((await s.api('GET', `/intents/${p[0].id}`, { key: payer.key })).body).toMatchObject({ status: 'paid', type: 'balance' });

    // Paying it again moves nothing and answers the same payment.
    const again = await s.api('POST', `/test_helpers/checkouts/${ch}/pay_with_balance`, { key: merchant.key, body: { payer_account_id: payer.id } });
    expect(again.body.payment_intent_id).toBe(pa.id);
    expect(await balance(payer.key)).toBe(payerBefore - 30000);
  });

  it('a refund gives the payer its money back: the merchant debited, the payer credited (ledger refund row), refund.create to the merchant', async () => {
    const ch = await checkout(merchant.key, 12000);
    const paid = await s.api('POST', `/test_helpers/checkouts/${ch}/pay_with_balance`, { key: merchant.key, body: { payer_account_id: payer.id } });
    expect(paid.body.status).toBe('succeeded');
    const payerBefore = await balance(payer.key);
    const merchantBefore = await balance(merchant.key);
    const fromM = merchantR.received.length;
    const fromP = payerR.received.length;
    const refund = await s.api('POST', '/refunds', { key: merchant.key, body: { payment_intent_id: paid.body.payment_intent_id } });
    expect(refund.status, JSON.stringify(refund.body)).toBe(201);
    expect(await balance(payer.key)).toBe(payerBefore + 12000);
    // The merchant gives back the gross; its fee is returned (money.refund_returns_fee, the default).
    expect(await balance(merchant.key)).toBe(merchantBefore - 12000 + refund.body.fee_returned_in_cents);
    const pRows = (await s.api('GET', '/balance_transactions?type=refund', { key: payer.key })).body;
    expect(pRows).toHaveLength(1);
    expect(pRows[0]).toMatchObject({ type: 'refund', amount_in_cents: 12000, fee_in_cents: 0, source_id: refund.body.id, source_type: 'refund' });
    expect((await deliveredSince(merchantR, secrets.merchant, fromM)).map((e) => e.event_type)).toEqual(['refund.create']);
    expect(await deliveredSince(payerR, secrets.payer, fromP)).toEqual([]);
  });

  it('a short balance declines the payment: failed, intent.failed + balance_intent.failed to the merchant, no money moved', async () => {
    const before = await balance(payer.key);
    const merchantBefore = await balance(merchant.key);
    const fromM = merchantR.received.length;
    const fromP = payerR.received.length;
    const ch = await checkout(merchant.key, before + 1);
    const r = await s.api('POST', `/test_helpers/checkouts/${ch}/pay_with_balance`, { key: merchant.key, body: { payer_account_id: payer.id } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ status: 'failed', balance_transaction_id: null });
    expect((await s.api('GET', `/payment_intents/${r.body.payment_intent_id}`, { key: merchant.key })).body).toMatchObject({
      method: 'balance',
      status: 'failed',
      failure_reason: 'insufficient_funds',
      fee_in_cents: 0,
    });
    expect(await balance(payer.key)).toBe(before);
    expect(await balance(merchant.key)).toBe(merchantBefore);
    expect((await s.api('GET', `/checkouts/${ch}`, { key: merchant.key })).body.status).toBe('failed');
    const m = await deliveredSince(merchantR, secrets.merchant, fromM);
    expect(m.map((e) => e.event_type)).toEqual(['intent.failed', 'balance_intent.failed']);
    expect(m[0]).toMatchObject({ type: 'balance', status: 'failed', details: { failure_reason: 'insufficient_funds', payer_account_id: payer.id } });
    expect(m[1]).toMatchObject({ id: r.body.payment_intent_id, failure_reason: 'insufficient_funds', checkout: { id: ch } });
    expect(await deliveredSince(payerR, secrets.payer, fromP)).toEqual([]);
  });

  it('refuses the merchant itself, an unknown payer and unknown fields', async () => {
    const ch = await checkout(merchant.key, 1000);
    for (const body of [{ payer_account_id: merchant.id }, { payer_account_id: 'ac_nobody' }]) {
      const r = await s.api('POST', `/test_helpers/checkouts/${ch}/pay_with_balance`, { key: merchant.key, body });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.errors.payer_account_id).toBeDefined();
    }
    const extra = await s.api('POST', `/test_helpers/checkouts/${ch}/pay_with_balance`, {
      key: merchant.key,
      body: { payer_account_id: payer.id, amount_in_cents: 1 },
    });
    expect(extra.status).toBe(400);
  });
});

describe('crypto payments', () => {
  async function pendingCrypto(amount: number) {
    const ch = await checkout(merchant.key, amount);
    const started = await s.api('POST', `/test_helpers/checkouts/${ch}/pending`, { key: merchant.key, body: { method: 'crypto' } });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body).toMatchObject({ status: 'payment_in_progress', payment_intent_id: expect.stringMatching(/^pa_/) });
    return { checkout: ch, pa: (await s.api('GET', `/payment_intents/${started.body.payment_intent_id}`, { key: merchant.key })).body };
  }

  it('pending until the network confirms; the confirmation posts the charge and emits intent.succeeded and crypto_intent.succeeded', async () => {
    const from = merchantR.received.length;
    const before = await balance(merchant.key);
    const { checkout: ch, pa } = await pendingCrypto(20000);
    expect(pa).toMatchObject({ method: 'crypto', status: 'pending', balance_transaction_id: null });
    const pending = await deliveredSince(merchantR, secrets.merchant, from);
    expect(pending.map((e) => e.event_type)).toEqual(['intent.pending', 'crypto_intent.pending']);
    expect(pending[0]).toMatchObject({
      id: pa.intent_id,
      type: 'crypto',
      status: 'pending',
      raw_status: 'awaiting_confirmation',
      details: { network: 'ethereum', transaction_hash: null },
    });

    const hash = `0x${'1f'.repeat(32)}`;
    const done = await s.api('POST', `/test_helpers/payment_intents/${pa.id}/confirm_crypto`, {
      key: merchant.key,
      body: { amount_in_cents: 20000, transaction_hash: hash },
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ status: 'succeeded', processor_reference: hash, balance_transaction_id: expect.stringMatching(/^txn_/) });
    expect(done.body.fee_in_cents).toBeLessThan(0);
    expect(await balance(merchant.key)).toBe(before + 20000 + done.body.fee_in_cents);
    const row = (await s.api('GET', `/balance_transactions/${done.body.balance_transaction_id}`, { key: merchant.key })).body;
    expect(row).toMatchObject({ type: 'charge', amount_in_cents: 20000, source_id: pa.id });
    expect((await s.api('GET', `/checkouts/${ch}`, { key: merchant.key })).body.status).toBe('paid');
    const settled = await deliveredSince(merchantR, secrets.merchant, from + 2);
    expect(settled.map((e) => e.event_type)).toEqual(['intent.succeeded', 'crypto_intent.succeeded']);
    expect(settled[0]).toMatchObject({
      type: 'crypto',
      status: 'succeeded',
      details: { transaction_hash: hash, fee: -done.body.fee_in_cents, failure_reason: null },
    });
    expect(settled[1]).toMatchObject({ id: pa.id, checkout: { payment_method: { type: 'crypto' } } });

    // The chain repeats its notice: nothing moves twice.
    const again = await s.api('POST', `/test_helpers/payment_intents/${pa.id}/confirm_crypto`, {
      key: merchant.key,
      body: { amount_in_cents: 20000, transaction_hash: hash },
    });
    expect(again.body.status).toBe('succeeded');
    expect(await balance(merchant.key)).toBe(before + 20000 + done.body.fee_in_cents);
  });

  it('short or reverted: failed, nothing posted, intent.failed and crypto_intent.failed', async () => {
    for (const [body, reason] of [
      [{ amount_in_cents: 100 }, 'amount_short'],
      [{ amount_in_cents: 5000, outcome: 'reverted' }, 'transaction_failed'],
    ] as const) {
      const before = await balance(merchant.key);
      const { checkout: ch, pa } = await pendingCrypto(5000);
      const from = merchantR.received.length;
      await deliveredSince(merchantR, secrets.merchant, from);
      const start = merchantR.received.length;
      const r = await s.api('POST', `/test_helpers/payment_intents/${pa.id}/confirm_crypto`, { key: merchant.key, body });
      expect(r.body).toMatchObject({ status: 'failed', failure_reason: reason, balance_transaction_id: null });
      expect(await balance(merchant.key)).toBe(before);
      expect((await s.api('GET', `/checkouts/${ch}`, { key: merchant.key })).body.status).toBe('failed');
      const ev = await deliveredSince(merchantR, secrets.merchant, start);
      expect(ev.map((e) => e.event_type)).toEqual(['intent.failed', 'crypto_intent.failed']);
      expect(ev[0].details).toMatchObject({ failure_reason: reason });
    }
  });

  it('is a sandbox helper: a live key gets 404', async () => {
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const live = accounts.createKey({
      accountId: accounts.createAccount({ name: 'Live', organizationId: s.installation.organization_id }).account.id,
      environment: 'live',
    }).key;
    const r = await s.api('POST', '/test_helpers/payment_intents/pa_x/confirm_crypto', { key: live, body: { amount_in_cents: 1 } });
    expect(r.status).toBe(404);
  });
});
