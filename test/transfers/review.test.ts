import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { AccountsService } from '../../src/accounts/service.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';
import { fund } from './money-helpers.js';

// Issue 15: a peer transfer above `money.transfer_review_above_in_cents` is held for review
// (transfer.pending, transfer.in_review; the money reserved, not moved), then released (the normal
// transfer.sent / transfer.received and the recipient's credit) or cancelled (transfer.cancelled,
// the reservation returned). Over HTTP against a real daemon, events delivered and verified.

const LIMIT = 50_000;
let s: TestServer;
const senderR = new Receiver();
const recipientR = new Receiver();
let recipient: { id: string; key: string };
const secrets: Record<'sender' | 'recipient', string> = { sender: '', recipient: '' };

beforeAll(async () => {
  await senderR.start();
  await recipientR.start();
  s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] }, money: { transfer_review_above_in_cents: LIMIT } } });
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  const r = accounts.createAccount({ name: 'Proveedor', organizationId: s.installation.organization_id });
  recipient = { id: r.sandbox.id, key: accounts.createKey({ accountId: r.sandbox.id, environment: 'test' }).key };
  secrets.sender = (await s.api('POST', '/webhook_endpoints', { body: { url: senderR.url } })).body.signingSecret;
  secrets.recipient = (await s.api('POST', '/webhook_endpoints', { key: recipient.key, body: { url: recipientR.url } })).body.signingSecret;
  fund(s.daemon.ctx, s.installation.sandbox_id, 500_000);
});
afterAll(async () => {
  await s.stop();
  await senderR.stop();
  await recipientR.stop();
});

async function available(key?: string): Promise<number> {
  const res = await s.api('GET', '/balances', { key });
  return res.body.find((b: { currency: string }) => b.currency === 'GTQ')?.available_in_cents ?? 0;
}

/** What each side received about transfer `id` since the marks, verified. */
async function delivered(id: string, marks: { sender: number; recipient: number }) {
  await deliveryWorkerOf(s.daemon.ctx)!.runDue();
  const of = (r: Receiver, secret: string, from: number) =>
    r.received
      .slice(from)
      .map((x) => new Webhook(secret).verify(x.body, x.headers as Record<string, string>) as Record<string, any>)
      .filter((b) => b.id === id);
  return { sender: of(senderR, secrets.sender, marks.sender), recipient: of(recipientR, secrets.recipient, marks.recipient) };
}
const mark = () => ({ sender: senderR.received.length, recipient: recipientR.received.length });

const TRANSFER_KEYS = [
  'event_type',
  'api_version',
  'id',
  'object',
  'kind',
  'direction',
  'status',
  'amount_in_cents',
  'currency',
  'account_id',
  'sender_id',
  'recipient_id',
  'sender',
  'recipient',
  'bank_account',
  'note',
  'balance_transaction_id',
  'return_balance_transaction_id',
  'failure_reason',
  'live_mode',
  'created_at',
  'updated_at',
].sort();

describe('transfers held for review', () => {
  it('a transfer at the limit moves at once, as before', async () => {
    const m = mark();
    const res = await s.api('POST', '/transfers', { body: { amount_in_cents: LIMIT, currency: 'GTQ', recipient_id: recipient.id } });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('completed');
    const got = await delivered(res.body.id, m);
    expect(got.sender.map((e) => e.event_type)).toEqual(['transfer.sent']);
    expect(got.recipient.map((e) => e.event_type)).toEqual(['transfer.received']);
  });

  let heldId: string;
  it('above the limit: in_review, transfer.pending then transfer.in_review to the sender, money reserved not moved', async () => {
    const [senderBefore, recipientBefore] = [await available(), await available(recipient.key)];
    const m = mark();
    const res = await s.api('POST', '/transfers', { body: { amount_in_cents: LIMIT + 1, currency: 'GTQ', recipient_id: recipient.id, note: 'Equipo' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ status: 'in_review', direction: 'outgoing', amount_in_cents: LIMIT + 1, return_balance_transaction_id: null });
    heldId = res.body.id;
    expect(await available()).toBe(senderBefore - (LIMIT + 1));
    expect(await available(recipient.key)).toBe(recipientBefore);
    const reservation = await s.api('GET', `/balance_transactions/${res.body.balance_transaction_id}`);
    expect(reservation.body).toMatchObject({ type: 'transfer', amount_in_cents: -(LIMIT + 1), source_id: heldId });
    // Not the recipient's yet: neither readable nor listed there.
    expect((await s.api('GET', `/transfers/${heldId}`, { key: recipient.key })).status).toBe(404);
    expect((await s.api('GET', '/transfers', { key: recipient.key })).body.map((t: { id: string }) => t.id)).not.toContain(heldId);

    const got = await delivered(heldId, m);
    expect(got.sender.map((e) => [e.event_type, e.status])).toEqual([
      ['transfer.pending', 'pending'],
      ['transfer.in_review', 'in_review'],
    ]);
    for (const e of got.sender) {
      expect(Object.keys(e).sort()).toEqual(TRANSFER_KEYS);
      expect(e).toMatchObject({
        api_version: '2025-01-01',
        account_id: s.installation.sandbox_id,
        recipient_id: recipient.id,
        balance_transaction_id: res.body.balance_transaction_id,
      });
    }
    expect(got.recipient).toEqual([]);
  });

  it('released: succeeded, the recipient credited, transfer.sent and transfer.received', async () => {
    const [senderBefore, recipientBefore] = [await available(), await available(recipient.key)];
    const m = mark();
    const res = await s.api('POST', `/test_helpers/transfers/${heldId}/review`, { body: { outcome: 'succeeded' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.status).toBe('completed');
    expect(await available()).toBe(senderBefore);
    expect(await available(recipient.key)).toBe(recipientBefore + LIMIT + 1);
    const seen = await s.api('GET', `/transfers/${heldId}`, { key: recipient.key });
    expect(seen.body).toMatchObject({ direction: 'incoming', status: 'completed' });
    const credit = await s.api('GET', `/balance_transactions/${seen.body.balance_transaction_id}`, { key: recipient.key });
    expect(credit.body).toMatchObject({ type: 'transfer', amount_in_cents: LIMIT + 1 });

    const got = await delivered(heldId, m);
    expect(got.sender.map((e) => [e.event_type, e.status])).toEqual([['transfer.sent', 'completed']]);
    expect(got.recipient.map((e) => [e.event_type, e.direction])).toEqual([['transfer.received', 'incoming']]);
    const again = await s.api('POST', `/test_helpers/transfers/${heldId}/review`, { body: { outcome: 'cancelled' } });
    expect([again.status, again.body.code]).toEqual([422, 'transfer_not_in_review']);
  });

  it('cancelled: the reservation comes back with a transfer row, transfer.cancelled with failure_reason', async () => {
    const [senderBefore, recipientBefore] = [await available(), await available(recipient.key)];
    const m = mark();
    const held = (await s.api('POST', '/transfers', { body: { amount_in_cents: 80_000, currency: 'GTQ', recipient_id: recipient.id } })).body;
    expect(held.status).toBe('in_review');
    expect(await available()).toBe(senderBefore - 80_000);
    const res = await s.api('POST', `/test_helpers/transfers/${held.id}/review`, { body: { outcome: 'cancelled', reason: 'suspected_fraud' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'cancelled', failure_reason: 'suspected_fraud' });
    expect(await available()).toBe(senderBefore);
    expect(await available(recipient.key)).toBe(recipientBefore);
    const back = await s.api('GET', `/balance_transactions/${res.body.return_balance_transaction_id}`);
    expect(back.body).toMatchObject({ type: 'transfer', amount_in_cents: 80_000, source_id: held.id });

    const got = await delivered(held.id, m);
    expect(got.sender.map((e) => [e.event_type, e.status, e.failure_reason])).toEqual([
      ['transfer.pending', 'pending', null],
      ['transfer.in_review', 'in_review', null],
      ['transfer.cancelled', 'cancelled', 'suspected_fraud'],
    ]);
    expect(Object.keys(got.sender[2]).sort()).toEqual(TRANSFER_KEYS);
    expect(got.sender[2].return_balance_transaction_id).toBe(res.body.return_balance_transaction_id);
    expect(got.recipient).toEqual([]);
    expect((await s.api('GET', `/transfers/${held.id}`, { key: recipient.key })).status).toBe(404);
  });

  it('refuses a held transfer the balance cannot cover, a review of an unheld transfer, unknown fields and live keys', async () => {
    const poor = await s.api('POST', '/transfers', {
      key: recipient.key,
      body: { amount_in_cents: 10_000_000, currency: 'GTQ', recipient_id: s.installation.sandbox_id },
    });
    expect([poor.status, poor.body.code]).toEqual([422, 'insufficient_funds']);
    const plain = (await s.api('POST', '/transfers', { body: { amount_in_cents: 100, currency: 'GTQ', recipient_id: recipient.id } })).body;
    const r = await s.api('POST', `/test_helpers/transfers/${plain.id}/review`, { body: { outcome: 'succeeded' } });
    expect([r.status, r.body.code]).toEqual([422, 'transfer_not_in_review']);
    const held = (await s.api('POST', '/transfers', { body: { amount_in_cents: 60_000, currency: 'GTQ', recipient_id: recipient.id } })).body;
    const unknown = await s.api('POST', `/test_helpers/transfers/${held.id}/review`, { body: { outcome: 'succeeded', approve: true } });
    expect([unknown.status, unknown.body.code]).toEqual([400, 'unknown_parameter']);
    const live = await s.api('POST', `/test_helpers/transfers/${held.id}/review`, { key: s.installation.keys.live, body: { outcome: 'succeeded' } });
    expect([live.status, live.body.code]).toEqual([404, 'route_not_found']);
    // The recipient cannot review a transfer it does not send.
    expect((await s.api('POST', `/test_helpers/transfers/${held.id}/review`, { key: recipient.key, body: { outcome: 'succeeded' } })).status).toBe(404);
    expect((await s.api('GET', `/transfers/${held.id}`)).body.status).toBe('in_review');
  });
});
