/**
 * A card stored offline is a payment that waits, like a bank transfer: over a real WebSocket link
 * and real HTTP (webhooks delivered to a real receiver, signatures verified), the stored result makes
 * the sale's payment intent `pending` and emits `intent.pending`; the forward result settles that
 * same intent (`intent.succeeded`, one ledger charge) or fails it (`intent.failed`, the sale owed
 * again); a payment never forwarded fails at its deadline (injected clock). While it waits, the
 * checkout takes no other payment.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startHarness, type Harness } from './helpers/harness.js';
import { Receiver } from '../helpers/receiver.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';
import { ManualClock } from '../../devices/index.js';

let h: Harness | undefined;
let receiver: Receiver;
let secret: string;
let clock: ManualClock;

beforeEach(async () => {
  receiver = new Receiver();
  await receiver.start();
  // Now, so the signatures' timestamps verify (until the test moves the clock two days ahead).
  clock = new ManualClock(Date.now());
  h = await startHarness('websocket', { protocol: 2, clock, config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
  const endpoint = await h.server.api('POST', '/webhook_endpoints', { body: { url: receiver.url } });
  expect(endpoint.status).toBe(201);
  secret = endpoint.body.signingSecret;
});
afterEach(async () => {
  await h?.stop();
  h = undefined;
  await receiver.stop();
});

/**
 * The intent events delivered to the receiver since `from`: signatures verified while the box's
 * clock is near the real one (a receiver refuses timestamps more than 5 min off: after the clock is
 * moved to a deadline, the body is read as sent).
 */
async function intentEvents(from: number): Promise<Array<Record<string, any>>> {
  await deliveryWorkerOf(h!.server.daemon.ctx)!.runDue();
  const moved = Math.abs(clock.now() - Date.now()) > 60_000;
  return receiver.received
    .slice(from)
    .map((x) => (moved ? JSON.parse(x.body) : new Webhook(secret).verify(x.body, x.headers as Record<string, string>)) as Record<string, any>)
    .filter((e) => String(e.event_type).startsWith('intent.'));
}

const api = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
  const r = await h!.server.api(method, path, body === undefined ? {} : { body });
  return r;
};

/** Charges, has the terminal store it, and answers the command, its checkout and its payment intent. */
async function storeOne(amount: number, reference: string) {
  const c = await h!.charge({ amount_in_cents: amount });
  expect(c.status).toBe(201);
  await h!.terminal.next('charge', (m) => m.command_id === c.body.id);
  await h!.terminal.ack(c.body.id);
  await h!.terminal.result(c.body.id, 'stored', { offline_reference: reference, card: { network: 'visa', last4: '4111' } });
  await h!.terminal.next('result_ack', (m) => m.command_id === c.body.id);
  const command = await h!.get(c.body.id);
  const checkout = (await api('GET', `/checkouts/${command.checkout_id}`)).body;
  return { id: c.body.id as string, checkout };
}

const chargeRows = () => (h!.server.daemon.ctx.db.prepare("SELECT COUNT(*) AS n FROM balance_transactions WHERE type = 'charge'").get() as { n: number }).n;

it('stored: the intent is pending (intent.pending); approved later: that same intent succeeds with one ledger charge', async () => {
  const from = receiver.received.length;
  const { id, checkout } = await storeOne(2_500, 'ref-ok');
  expect(checkout).toMatchObject({ status: 'payment_in_progress', payment_intent_id: expect.stringMatching(/^pa_/) });
  const pa = (await api('GET', `/payment_intents/${checkout.payment_intent_id}`)).body;
  expect(pa).toMatchObject({
    status: 'pending',
    method: 'terminal',
    amount_in_cents: 2_500,
    balance_transaction_id: null,
    card: { network: 'visa', last4: '4111' },
  });
  const storedAt = pa.offline.stored_at as string;
  expect(pa.offline).toEqual({ stored_at: expect.any(String), forwarded_at: null });
  expect((await api('GET', `/intents/${pa.intent_id}`)).body).toMatchObject({
    status: 'pending',
    raw_status: 'stored_offline',
    type: 'payment',
    details: { offline: { stored_at: storedAt, forwarded_at: null } },
  });
  const pending = await intentEvents(from);
  expect(pending.map((e) => e.event_type)).toEqual(['intent.pending']);
  expect(pending[0]).toMatchObject({
    id: pa.intent_id,
    status: 'pending',
    checkout: { id: checkout.id, status: 'payment_in_progress' },
    details: { offline: { stored_at: storedAt } },
  });
  expect(await h!.get(id)).toMatchObject({ status: 'stored', final: false });

  // While it waits, the checkout takes no other payment (the card will be charged when forwarded).
  const other = await api('POST', `/test_helpers/checkouts/${checkout.id}/pay`, { method: 'card', outcome: 'succeeded' });
  expect(other.status).toBe(422);
  expect(other.body.code).toBe('checkout_not_modifiable');
  const abandon = await api('POST', `/test_helpers/checkouts/${checkout.id}/abandon`, {});
  expect(abandon.status).toBe(422);
  expect(abandon.body.code).toBe('checkout_not_modifiable');
  expect((await api('GET', `/payment_intents/${pa.id}`)).body.status).toBe('pending');

  const charges = chargeRows();
  await h!.terminal.forward(id, 'ref-ok', 'approved');
  await h!.terminal.next('forward_ack', (a) => a.offline_reference === 'ref-ok');
  const after = await api('GET', `/checkouts/${checkout.id}`);
  expect(after.body).toMatchObject({ status: 'paid', payment_intent_id: pa.id });
  // Approved, it stays recognisable as a card taken offline: on the payment intent, its intent and its event.
  const settled = (await api('GET', `/payment_intents/${pa.id}`)).body;
  expect(settled).toMatchObject({
    status: 'succeeded',
    authorization_code: 'OFF123',
    processor_reference: 'proc-ref-ok',
    balance_transaction_id: expect.stringMatching(/^txn_/),
    offline: { stored_at: storedAt, forwarded_at: expect.any(String) },
  });
  expect((await api('GET', `/intents/${pa.intent_id}`)).body).toMatchObject({
    status: 'succeeded',
    raw_status: 'succeeded',
    details: { offline: settled.offline },
  });
  expect(await h!.get(id)).toMatchObject({ status: 'consumed', final: true });
  expect(chargeRows()).toBe(charges + 1);
  const done = await intentEvents(from + 1);
  expect(done.map((e) => e.event_type)).toEqual(['intent.succeeded']);
  expect(done[0]).toMatchObject({ id: pa.intent_id, status: 'succeeded', details: { offline: settled.offline } });
  // The same answer again moves nothing and emits nothing.
  await h!.terminal.forward(id, 'ref-ok', 'approved');
  await h!.terminal.next('forward_ack', (a) => a.offline_reference === 'ref-ok');
  expect(await intentEvents(from + 2)).toEqual([]);
  expect(chargeRows()).toBe(charges + 1);
  expect(h!.server.daemon.ctx.db.prepare('SELECT COUNT(*) AS n FROM payment_intents WHERE checkout_id = ?').get(checkout.id)).toEqual({ n: 1 });
});

it('declined later: the intent fails (intent.failed) and the checkout owes again; expired at its deadline: the same', async () => {
  const from = receiver.received.length;
  const declined = await storeOne(1_800, 'ref-no');
  const expired = await storeOne(900, 'ref-never');
  expect((await intentEvents(from)).map((e) => e.event_type)).toEqual(['intent.pending', 'intent.pending']);

  await h!.terminal.forward(declined.id, 'ref-no', 'declined');
  await h!.terminal.next('forward_ack', (a) => a.offline_reference === 'ref-no');
  expect((await api('GET', `/checkouts/${declined.checkout.id}`)).body).toMatchObject({
    status: 'unpaid',
    payment_intent_id: declined.checkout.payment_intent_id,
  });
  const pa = (await api('GET', `/payment_intents/${declined.checkout.payment_intent_id}`)).body;
  expect(pa).toMatchObject({ status: 'failed', failure_reason: 'insufficient_funds', balance_transaction_id: null });
  const failed = await intentEvents(from + 2);
  expect(failed.map((e) => e.event_type)).toEqual(['intent.failed']);
  expect(failed[0]).toMatchObject({
    id: pa.intent_id,
    status: 'failed',
    details: { failure_reason: 'insufficient_funds' },
    checkout: { id: declined.checkout.id, status: 'unpaid' },
  });

  // The other is never forwarded: at its deadline (48 h) posd expires it.
  clock.advance(48 * 3600_000 - 1);
  expect((await api('GET', `/payment_intents/${expired.checkout.payment_intent_id}`)).body.status).toBe('pending');
  clock.advance(1);
  const gone = (await api('GET', `/payment_intents/${expired.checkout.payment_intent_id}`)).body;
  expect(gone).toMatchObject({ status: 'failed', failure_reason: 'not_forwarded_in_time' });
  expect((await api('GET', `/checkouts/${expired.checkout.id}`)).body.status).toBe('unpaid');
  const late = await intentEvents(from + 3);
  expect(late.map((e) => e.event_type)).toEqual(['intent.failed']);
  expect(late[0]).toMatchObject({ id: gone.intent_id, details: { failure_reason: 'not_forwarded_in_time' } });
  // A late approval of the expired card is kept for the manager, not applied: no second outcome.
  await h!.terminal.forward(expired.id, 'ref-never', 'approved');
  await h!.terminal.next('forward_ack', (a) => a.offline_reference === 'ref-never');
  expect((await api('GET', `/payment_intents/${gone.id}`)).body.status).toBe('failed');
  expect(await intentEvents(from + 4)).toEqual([]);

  // Owed again: the checkout can be paid by other means now.
  const paid = await api('POST', `/test_helpers/checkouts/${declined.checkout.id}/pay`, { method: 'card', outcome: 'succeeded' });
  expect(paid.status, JSON.stringify(paid.body)).toBe(200);
  expect((await api('GET', `/checkouts/${declined.checkout.id}`)).body.status).toBe('paid');
});

it("restored from an older backup, the box takes back a stored card's final state from its own stored_payment record", async () => {
  const { checkout } = await storeOne(1_200, 'ref-restore');
  const ctx = h!.server.daemon.ctx;
  const row = ctx.db.prepare('SELECT * FROM stored_payments WHERE offline_reference = ?').get('ref-restore') as Record<string, any>;
  expect(row).toMatchObject({ status: 'stored', final: 0, payment_intent_id: checkout.payment_intent_id });
  // The record the box had pushed before the backup it was restored from was taken (sync/store/rejoin.ts).
  const payload = {
    id: row.id,
    terminal_id: row.terminal_id,
    command_id: row.command_id,
    checkout_id: row.checkout_id,
    payment_intent_id: row.payment_intent_id,
    offline_reference: row.offline_reference,
    status: 'declined',
    amount_in_cents: 1_200,
    currency: 'GTQ',
    card_network: 'visa',
    card_last4: '4111',
    over_cap: null,
    reason: 'insufficient_funds',
    stored_at: row.stored_at,
    forward_by: row.forward_by,
    forwarded_at: null,
    settled_at: row.stored_at,
  };
  const apply = ctx.registry.sync.applier('stored_payment')!;
  const record = { id: 'sync_restore', kind: 'stored_payment', account_id: row.account_id, live_mode: false, payload, created_at: row.stored_at };
  ctx.db.transaction(() => apply(ctx, record as never, { storeId: 'st_self', keyAccountId: row.account_id, restoring: true }))();
  expect(ctx.db.prepare('SELECT status, final, reason, settled_at FROM stored_payments WHERE id = ?').get(row.id)).toEqual({
    status: 'declined',
    final: 1,
    reason: 'insufficient_funds',
    settled_at: row.stored_at,
  });
  // Its own row, not a central's copy.
  expect(ctx.db.prepare('SELECT COUNT(*) AS n FROM central_stored_payments').get()).toEqual({ n: 0 });
});
