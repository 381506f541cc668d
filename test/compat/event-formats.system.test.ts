import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { runPosd } from '../helpers/process.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';

/**
 * Issue 14 part 3: an account's event format is `unified` or `both`, set by the operator with
 * `posd accounts set <account> --event-formats both` (or `posd init --event-formats`). A shop whose
 * plugin waits for `payment_intent.succeeded` in test mode gets it beside `intent.succeeded`, and
 * both payloads' `checkout` carry the checkout's metadata (the plugin finds its order there). Real
 * daemon, the built CLI against its data folder, a real receiver, signatures verified by the
 * `standardwebhooks` package.
 */

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

type Event = Record<string, any>;
/** Every delivery so far, each verified (a forged or altered one throws). */
async function delivered(): Promise<Event[]> {
  await deliveryWorkerOf(s.daemon.ctx)!.runDue();
  return receiver.received.map((x) => new Webhook(secret).verify(x.body, x.headers as Record<string, string>) as Event);
}

async function paidOrder(orderId: string): Promise<{ checkout_id: string; payment_intent_id: string; intent_id: string }> {
  const ch = await s.api('POST', '/checkouts', {
    body: {
      checkout: {
        items: [{ name: 'Pedido', amount_in_cents: 5000, currency: 'GTQ', quantity: 1, charge_type: 'one_time' }],
        metadata: { wc_order_id: orderId, source: 'woocommerce' },
      },
    },
  });
  expect(ch.status).toBe(201);
  const paid = await s.api('POST', `/test_helpers/checkouts/${ch.body.id}/pay`, { body: { method: 'card', outcome: 'succeeded' } });
  expect(paid.status, JSON.stringify(paid.body)).toBe(200);
  return paid.body;
}

/** Waits (by the receiver's own signal) for the delivery matching `pred`. */
async function waitForEvent(pred: (e: Event) => boolean): Promise<Event> {
  for (let n = receiver.received.length; ; n++) {
    const found = (await delivered()).find(pred);
    if (found) return found;
    await receiver.waitFor(n + 1);
  }
}

describe('event formats (spec 6.3)', () => {
  it('a new sandbox is unified; with both, a test-mode payment also sends payment_intent.succeeded, each carrying checkout.metadata', async () => {
    const live = s.installation.account_id;
    const shown = await runPosd(['accounts', 'settings', s.installation.sandbox_id, '--data', s.dataDir, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).event_format).toBe('unified');

    // Unified only: the order's intent.succeeded, then (FIFO per endpoint) nothing legacy for it.
    const first = await paidOrder('1001');
    const set = await runPosd(['accounts', 'set', live, '--event-formats', 'both', '--data', s.dataDir, '--json']);
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toEqual([
      { account_id: live, environment: 'live', event_format: 'both' },
      { account_id: s.installation.sandbox_id, environment: 'sandbox', event_format: 'both' },
    ]);

    const second = await paidOrder('1002');
    const legacy = await waitForEvent((e) => e.event_type === 'payment_intent.succeeded' && e.id === second.payment_intent_id);
    const unified = await waitForEvent((e) => e.event_type === 'intent.succeeded' && e.id === second.intent_id);
    expect(legacy.checkout).toMatchObject({ id: second.checkout_id, status: 'paid', metadata: { wc_order_id: '1002', source: 'woocommerce' } });
    expect(legacy.amount_in_cents).toBe(5000);
    // The card is named by its own id, the one the checkout answers; pa_ is the payment intent's (issue 34).
    expect(legacy.checkout.payment_method.id).toMatch(/^pay_m_/);
    expect(legacy.checkout.payment_method.id).toBe((await s.api('GET', `/checkouts/${second.checkout_id}`)).body.payment_method.id);
    expect(unified.checkout).toEqual({ id: second.checkout_id, status: 'paid', metadata: { wc_order_id: '1002', source: 'woocommerce' } });
    expect(unified.legacy_id).toBe(second.payment_intent_id);

    const all = await delivered();
    expect(all.find((e) => e.event_type === 'intent.succeeded' && e.id === first.intent_id)?.checkout.metadata).toEqual({
      wc_order_id: '1001',
      source: 'woocommerce',
    });
    expect(all.filter((e) => e.event_type === 'payment_intent.succeeded').map((e) => e.id)).toEqual([second.payment_intent_id]);
    // GET /intents/{id} is the same document.
    const doc = await s.api('GET', `/intents/${second.intent_id}`);
    expect(doc.body.checkout.metadata).toEqual({ wc_order_id: '1002', source: 'woocommerce' });

    // Back to unified: the next payment's legacy twin is not sent.
    const back = await runPosd(['accounts', 'set', s.installation.sandbox_id, '--event-formats', 'unified', '--data', s.dataDir]);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toContain(`${s.installation.sandbox_id} (sandbox): event_format unified`);
    const third = await paidOrder('1003');
    await waitForEvent((e) => e.event_type === 'intent.succeeded' && e.id === third.intent_id);
    const bad = await runPosd(['accounts', 'set', live, '--event-formats', 'legacy', '--data', s.dataDir]);
    expect(bad.code).not.toBe(0);
    // A later payment under `both` again proves, by the endpoint's order, that none came for the third.
    await runPosd(['accounts', 'set', s.installation.sandbox_id, '--event-formats', 'both', '--data', s.dataDir]);
    const fourth = await paidOrder('1004');
    await waitForEvent((e) => e.event_type === 'payment_intent.succeeded' && e.id === fourth.payment_intent_id);
    expect((await delivered()).filter((e) => e.event_type === 'payment_intent.succeeded').map((e) => e.id)).toEqual([
      second.payment_intent_id,
      fourth.payment_intent_id,
    ]);
  });

  it('posd init says the formats and when to choose both; accounts settings takes validated embed origins', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'posd-init-'));
    try {
      const init = await runPosd(['init', '--data', dir]);
      expect(init.code, init.stderr).toBe(0);
      expect(init.stdout).toMatch(/events\s+live unified \(intent\.\* only\); sandbox unified/);
      expect(init.stdout).toContain('--event-formats both) when this account');
      expect(init.stdout).toContain('payment_intent.succeeded');
      const live = /account\s+(ac_\w+) \(live\), sandbox (sbx_\w+)/.exec(init.stdout)!;
      const refused = await runPosd(['accounts', 'settings', live[1]!, '--embed-origins', 'http://shop.example', '--data', dir]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('plain http only for localhost');
      const withPath = await runPosd(['accounts', 'settings', live[1]!, '--embed-origins', 'https://shop.example/checkout', '--data', dir]);
      expect(withPath.code).not.toBe(0);
      const onSandbox = await runPosd(['accounts', 'settings', live[2]!, '--embed-origins', 'https://shop.example', '--data', dir]);
      expect(onSandbox.code).not.toBe(0);
      const set = await runPosd(['accounts', 'settings', live[1]!, '--embed-origins', 'https://Shop.example, http://localhost:3000', '--data', dir, '--json']);
      expect(set.code, set.stderr).toBe(0);
      expect(JSON.parse(set.stdout).settings.embed_origins).toEqual(['https://shop.example', 'http://localhost:3000']);
      const both = await runPosd(['init', '--data', join(dir, 'second'), '--event-formats', 'both']);
      expect(both.stdout).toMatch(/events\s+live both \(intent\.\* and legacy payment_intent\.\*\); sandbox both/);
      expect(both.stdout).not.toContain('Choose both');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('posd init --event-formats both makes the first account and its sandbox send both', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'posd-init-'));
    try {
      const init = await runPosd(['init', '--data', dir, '--event-formats', 'both', '--json']);
      expect(init.code, init.stderr).toBe(0);
      const inst = JSON.parse(init.stdout);
      for (const id of [inst.account_id, inst.sandbox_id]) {
        const shown = await runPosd(['accounts', 'settings', id, '--data', dir, '--json']);
        expect(JSON.parse(shown.stdout).event_format, id).toBe('both');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
