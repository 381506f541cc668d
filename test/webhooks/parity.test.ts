import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { shapeDiff } from '../helpers/shape.js';
import { fund } from '../transfers/money-helpers.js';
import { AccountsService } from '../../src/accounts/service.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';
import { catalogueEntry } from '../../src/events/catalogue.js';

// Issue 15: a test-send (`POST /webhook_endpoints/{id}/test`) has exactly the shape and api_version
// of the real event. Every catalogue event with a real emitter is made here by its real action over
// HTTP, received by a real receiver (signature verified), and compared key by key, recursively,
// with the test-send of the same type at the same endpoint.

/** The events a real action emits, each made below. Events only a test-send makes are in docs/events.md. */
const REAL = [
  'intent.succeeded',
  'intent.failed',
  'intent.pending',
  'intent.canceled',
  'payment_intent.succeeded',
  'payment_intent.failed',
  'bank_transfer_intent.pending',
  'bank_transfer_intent.succeeded',
  'bank_transfer_intent.failed',
  'cash_intent.succeeded',
  'automated_bank_transfer_intent.succeeded',
  'refund.create',
  'dispute.create',
  'dispute.update',
  'subscription.create',
  'subscription.past_due',
  'subscription.pause',
  'subscription.unpause',
  'subscription.reactivate',
  'subscription.update',
  'subscription.item_added',
  'subscription.item_removed',
  'subscription.invoice_item_added',
  'subscription.cancel',
  'setup_intent.succeeded',
  'setup_intent.cancelled',
  'account_connection.create',
  'verification.rejected',
  'verification.completed',
  'tax_invoice_settings.enabled',
  'transfer.sent',
  'transfer.received',
  'transfer.pending',
  'transfer.in_review',
  'transfer.cancelled',
  'withdrawal.create',
  'withdrawal.update',
  'contract.send',
  // Balance, crypto and stablecoin payments (issue 15, i15-balance).
  'intent.paid',
  'balance_intent.succeeded',
  'balance_intent.failed',
  'crypto_intent.pending',
  'crypto_intent.succeeded',
  'crypto_intent.failed',
  'swap.create',
  'swap.update',
];

let s: TestServer;
const platformR = new Receiver();
const recipientR = new Receiver();
let recipient: { id: string; key: string };
const endpoints: Record<'platform' | 'recipient', { id: string; signingSecret: string; key?: string }> = {} as never;

const ok = async <T = any>(p: Promise<{ status: number; body: T }>, status = [200, 201]): Promise<T> => {
  const r = await p;
  expect(status, JSON.stringify(r.body)).toContain(r.status);
  return r.body;
};

beforeAll(async () => {
  await platformR.start();
  await recipientR.start();
  // Transfers above 50,000 cents are held for review (transfer.pending / in_review / cancelled).
  s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] }, money: { transfer_review_above_in_cents: 50_000 } } });
  // Every sandbox gets the unified format only; this one is set to both, so the legacy twins are
  // emitted too (as for a live account older than events.unified_since).
  s.daemon.ctx.db.prepare(`UPDATE accounts SET event_format = 'both' WHERE id = ?`).run(s.installation.sandbox_id);
  const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
  const r = accounts.createAccount({ name: 'Recipient', organizationId: s.installation.organization_id });
  recipient = { id: r.sandbox.id, key: accounts.createKey({ accountId: r.sandbox.id, environment: 'test' }).key };
  endpoints.platform = await ok(s.api('POST', '/webhook_endpoints', { body: { url: platformR.url } }));
  endpoints.recipient = { ...(await ok(s.api('POST', '/webhook_endpoints', { key: recipient.key, body: { url: recipientR.url } }))), key: recipient.key };
});
afterAll(async () => {
  await s.stop();
  await platformR.stop();
  await recipientR.stop();
});

const pay = (checkoutId: string, method: 'card' | 'bank_transfer', outcome: 'succeeded' | 'failed') =>
  ok(s.api('POST', `/test_helpers/checkouts/${checkoutId}/pay`, { body: { method, outcome } }));

async function checkout(customerId: string, items: unknown[] = [{ name: 'Limpieza dental', amount_in_cents: 30000, quantity: 1 }]): Promise<string> {
  return (await ok(s.api('POST', '/checkouts', { body: { items, customer_id: customerId } }))).id;
}

/** Every real action, in an order that makes the first event of each type the one the test-send shows (a card payment's intent.*). */
async function actAll(): Promise<void> {
  const customer = (await ok(s.api('POST', '/customers', { body: { email: 'ana@example.com', name: 'Ana López', phone: '+50255550123' } }))).id;

  // Payments: card (the intent.* the test-send shows), then bank transfers, cash, a refund.
  const product = await ok(
    s.api('POST', '/products', { body: { product: { name: 'Limpieza', prices_attributes: [{ currency: 'GTQ', amount_in_cents: 30000 }] } } }),
  );
  const paid = await pay(await checkout(customer, [{ price_id: product.prices[0].id }]), 'card', 'succeeded');
  await pay(await checkout(customer), 'card', 'failed');
  const waiting = await checkout(customer);
  await ok(s.api('POST', `/test_helpers/checkouts/${waiting}/pending`, { body: { method: 'bank_transfer' } }));
  await pay(waiting, 'bank_transfer', 'succeeded');
  const abandoned = await checkout(customer);
  await ok(s.api('POST', `/test_helpers/checkouts/${abandoned}/pending`, { body: { method: 'bank_transfer' } }));
  await ok(s.api('POST', `/test_helpers/checkouts/${abandoned}/abandon`));
  await pay(await checkout(customer), 'bank_transfer', 'failed');
  // A transfer the bank's automated notice matched by its reference.
  const matched = await ok(s.api('POST', `/test_helpers/checkouts/${await checkout(customer)}/pending`, { body: { method: 'bank_transfer' } }));
  await ok(
    s.api('POST', `/test_helpers/payment_intents/${matched.payment_intent_id}/receive_transfer`, {
      body: { amount_in_cents: 30000, bank_reference: 'BI-778812', automated: true },
    }),
  );
  await ok(s.api('POST', '/cash_sales', { body: { amount_in_cents: 2500, currency: 'GTQ', customer_id: customer } }));
  await ok(s.api('POST', '/refunds', { body: { payment_intent_id: paid.payment_intent_id, reason: 'requested_by_customer' } }));
  // A chargeback on another card payment: opened, under review, won.
  const disputed = await pay(await checkout(customer), 'card', 'succeeded');
  const dispute = await ok(s.api('POST', `/test_helpers/payment_intents/${disputed.payment_intent_id}/dispute`, { body: { reason: 'fraudulent' } }));
  await ok(s.api('POST', `/test_helpers/disputes/${dispute.id}/advance`, { body: { outcome: 'under_review' } }));
  await ok(s.api('POST', `/test_helpers/disputes/${dispute.id}/advance`, { body: { outcome: 'won' } }));

  // Subscriptions: bought through a checkout, then every change and move.
  const plan = await ok(
    s.api('POST', '/products', {
      body: {
        product: { name: 'Plan', prices_attributes: [{ currency: 'GTQ', amount_in_cents: 10000, charge_type: 'recurring', billing_interval: 'month' }] },
      },
    }),
  );
  const addon = await ok(
    s.api('POST', '/products', {
      body: {
        product: { name: 'Casillero', prices_attributes: [{ currency: 'GTQ', amount_in_cents: 2500, charge_type: 'recurring', billing_interval: 'month' }] },
      },
    }),
  );
  await pay(await checkout(customer, [{ price_id: plan.prices[0].id }]), 'card', 'succeeded');
  const sub = (await ok(s.api('GET', '/subscriptions')))[0];
  await ok(s.api('PATCH', `/subscriptions/${sub.id}`, { body: { status: 'paused' } }));
  await ok(s.api('PATCH', `/subscriptions/${sub.id}`, { body: { status: 'active' } }));
  await ok(s.api('PATCH', `/subscriptions/${sub.id}`, { body: { card: { network: 'mastercard', last4: '5555' } } }));
  const added = await ok(s.api('PATCH', `/subscriptions/${sub.id}`, { body: { add_items: [{ price_id: addon.prices[0].id }] } }));
  await ok(s.api('PATCH', `/subscriptions/${sub.id}`, { body: { remove_items: [added.items[0].id] } }));
  await ok(s.api('PATCH', `/subscriptions/${sub.id}`, { body: { invoice_items: [{ description: 'Toalla', amount_in_cents: 500 }] } }));
  await ok(s.api('POST', `/test_helpers/subscriptions/${sub.id}/advance`, { body: { outcome: 'failed' } }));
  await ok(s.api('DELETE', `/subscriptions/${sub.id}`));
  await ok(s.api('PATCH', `/subscriptions/${sub.id}`, { body: { status: 'active' } }));
  const trialPlan = await ok(
    s.api('POST', '/products', {
      body: {
        product: {
          name: 'Yoga',
          prices_attributes: [{ currency: 'GTQ', amount_in_cents: 15000, charge_type: 'recurring', billing_interval: 'month', free_trial_interval: 'week' }],
        },
      },
    }),
  );
  const trial = await ok(
    s.api('POST', '/subscriptions', { body: { price_id: trialPlan.prices[0].id, customer_id: customer, card: { network: 'visa', last4: '4242' } } }),
  );
  await ok(s.api('POST', `/test_helpers/subscriptions/${trial.id}/advance`, { body: { outcome: 'failed' } }));

  // Connected accounts: connected, documents rejected then accepted, electronic invoicing on.
  const identity = { number: '1234567890101', expires_on: '2030-01-01', file_url: 'https://docs.example/dpi.pdf' };
  // Recent enough to be accepted: only the tax registration is rejected, as in the test-send.
  const proof = {
    address: '6a avenida 10-20 zona 1',
    issued_on: new Date(Date.now() - 5 * 86_400_000).toISOString().slice(0, 10),
    file_url: 'https://docs.example/luz.pdf',
  };
  const child = await ok(s.api('POST', '/connected_accounts', { body: { email: 'bella@example.com', name: 'Salón Bella' } }));
  await ok(
    s.api('POST', '/connected_accounts', {
      body: {
        email: 'bella@example.com',
        documents: {
          identity_document: identity,
          proof_of_address: proof,
          tax_registration: { nit: '12345670', legal_name: 'Salón Bella, S.A.', file_url: 'https://docs.example/rtu.pdf' },
        },
      },
    }),
  );
  await ok(
    s.api('POST', '/connected_accounts', {
      body: {
        email: 'bella@example.com',
        documents: { tax_registration: { nit: '1234567-9', legal_name: 'Salón Bella, S.A.', file_url: 'https://docs.example/rtu.pdf' } },
      },
    }),
  );
  await ok(
    s.api('PUT', `/connected_accounts/${child.id}/tax_invoicing`, {
      body: { provider: 'infile', establishment_code: '1', username: 'bella', api_key: 'SECRET-KEY-123' },
    }),
  );

  // Money movements: a peer transfer (sent here, received at the recipient) and a withdrawal.
  fund(s.daemon.ctx, s.installation.sandbox_id, 100_000);
  await ok(s.api('POST', '/transfers', { body: { amount_in_cents: 2500, currency: 'GTQ', recipient_id: recipient.id, note: 'Renta' } }));
  const bank = await ok(
    s.api('POST', '/bank_accounts', {
      body: { holder_name: 'Clínica Sonrisa', number: '0123456789', bank_name: 'Banrural', currency: 'GTQ', account_type: 'monetaria' },
    }),
  );
  const withdrawal = await ok(s.api('POST', '/withdrawals', { body: { amount_in_cents: 30_000, currency: 'GTQ', bank_account_id: bank.id } }));
  await ok(s.api('POST', `/test_helpers/withdrawals/${withdrawal.id}/advance`, { body: { outcome: 'paid' } }));
  // A transfer above the review limit: held (pending, in_review), then cancelled by the reviewer.
  const held = await ok(s.api('POST', '/transfers', { body: { amount_in_cents: 60_000, currency: 'GTQ', recipient_id: recipient.id } }));
  await ok(s.api('POST', `/test_helpers/transfers/${held.id}/review`, { body: { outcome: 'cancelled' } }));

  // Balance, crypto and stablecoin payments (after the card's intent.*, so those stay the compared ones).
  await balanceCryptoSwap(customer);

  // A contract sent.
  const template = await ok(s.api('POST', '/contract_templates', { body: { name: 'Consentimiento', body: '<p>Yo, {nombre}, autorizo.</p>', fields: [] } }));
  await ok(s.api('POST', '/contracts', { body: { template_id: template.id, customer_id: customer, sent_via: 'link' } }));
}

/** A balance payment by the recipient (intent.paid there) and a declined one, crypto payments, a USD → USDC swap. */
async function balanceCryptoSwap(customer: string): Promise<void> {
  fund(s.daemon.ctx, recipient.id, 5000);
  await ok(
    s.api('POST', `/test_helpers/checkouts/${await checkout(customer, [{ name: 'Insumos', amount_in_cents: 4000, quantity: 1 }])}/pay_with_balance`, {
      body: { payer_account_id: recipient.id },
    }),
  );
  await ok(s.api('POST', `/test_helpers/checkouts/${await checkout(customer)}/pay_with_balance`, { body: { payer_account_id: recipient.id } }));
  for (const amount of [30000, 1]) {
    const ch = await checkout(customer);
    const started = await ok(s.api('POST', `/test_helpers/checkouts/${ch}/pending`, { body: { method: 'crypto' } }));
    await ok(s.api('POST', `/test_helpers/payment_intents/${started.payment_intent_id}/confirm_crypto`, { body: { amount_in_cents: amount } }));
  }
  fund(s.daemon.ctx, s.installation.sandbox_id, 10_000, 'USD');
  const swap = await ok(s.api('POST', '/swaps', { body: { amount_in_cents: 10_000, from_currency: 'USD', to_currency: 'USDC' } }));
  await ok(s.api('POST', `/test_helpers/swaps/${swap.id}/advance`, { body: { outcome: 'completed' } }));
}

function verified(r: Receiver, secret: string, from = 0): Array<Record<string, unknown>> {
  return r.received.slice(from).map((x) => new Webhook(secret).verify(x.body, x.headers as Record<string, string>) as Record<string, unknown>);
}

describe('test-sends have the shape of real events', () => {
  it('every event a real action emits matches its test-send: keys (recursively), value kinds and api_version', async () => {
    await actAll();
    await deliveryWorkerOf(s.daemon.ctx)!.runDue();
    const real = new Map<string, { body: Record<string, unknown>; at: 'platform' | 'recipient' }>();
    for (const [at, r] of [
      ['platform', platformR],
      ['recipient', recipientR],
    ] as const) {
      for (const body of verified(r, endpoints[at].signingSecret)) if (!real.has(body.event_type as string)) real.set(body.event_type as string, { body, at });
    }
    const diffs: string[] = [];
    for (const [type, { body, at }] of real) {
      const ep = endpoints[at];
      const r = at === 'platform' ? platformR : recipientR;
      const before = r.received.length;
      const sent = await s.api('POST', `/webhook_endpoints/${ep.id}/test`, { key: ep.key, body: { event_type: type } });
      expect(sent.status, type).toBe(200);
      const [test] = verified(r, ep.signingSecret, before);
      expect(test.event_type).toBe(type);
      if (test.api_version !== body.api_version) diffs.push(`${type}: api_version ${body.api_version} (real) vs ${test.api_version} (test)`);
      diffs.push(
        ...shapeDiff(body, test, type).map((d) =>
          d.replace('only in the first', 'only in the real event').replace('only in the second', 'only in the test-send'),
        ),
      );
    }
    expect(diffs).toEqual([]);
    expect([...real.keys()].filter((t) => catalogueEntry(t)).sort()).toEqual([...REAL].sort());
  });
});
