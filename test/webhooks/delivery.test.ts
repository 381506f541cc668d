import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver, type Reply } from '../helpers/receiver.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { tx } from '../../src/db/database.js';
import { accountsModule } from '../../src/modules/accounts/index.js';
import { createWebhooksModule, deliveryWorkerOf, type DeliveryWorker } from '../../src/modules/webhooks/index.js';
import { systemResolver, type Resolver } from '../../src/system/url-guard.js';
import { AccountsService } from '../../src/accounts/service.js';
import { reemitEvent } from '../../src/events/reemit.js';
import { UNIFIED_API_VERSION } from '../../src/events/formats.js';

// Signatures are checked with the standardwebhooks package, which compares webhook-timestamp with
// the real time (5 minutes either way): the manual clock starts 3 minutes in the past so the
// first few attempts of a schedule stay inside that window.
const clock = new ManualClock();
const dns: Record<string, string> = { 'receiver.test': '127.0.0.1', 'inward.test': '10.9.8.7', 'turns.test': '93.184.215.14' };
const resolver: Resolver = async (host) => (dns[host] ? [{ address: dns[host], family: 4 }] : systemResolver(host));

let s: TestServer;
let worker: DeliveryWorker;
const receivers: Receiver[] = [];

async function receiver(replies: Reply[] = [{ status: 200 }]): Promise<Receiver> {
  const r = new Receiver(replies);
  await r.start();
  receivers.push(r);
  return r;
}

async function endpoint(url: string, key = s.installation.keys.test): Promise<{ id: string; signingSecret: string }> {
  const res = await s.api('POST', '/webhook_endpoints', { key, body: { url } });
  expect(res.status).toBe(201);
  return res.body;
}

function emit(
  type: string,
  accountId = s.installation.sandbox_id,
  liveMode = false,
  payload: Record<string, unknown> = { id: 'in_example', amount_in_cents: 1234 },
) {
  return tx(s.daemon.ctx.db, () => s.daemon.ctx.outbox.emit({ type, accountId, liveMode, payload }));
}

async function deliveries(endpointId: string, key = s.installation.keys.test) {
  const res = await s.api('GET', `/webhook_endpoints/${endpointId}/deliveries`, { key });
  expect(res.status).toBe(200);
  return res.body as Array<Record<string, any>>;
}

beforeAll(async () => {
  s = await startTestServer({
    clock,
    config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } },
    modules: [accountsModule, createWebhooksModule({ resolver })],
  });
  worker = deliveryWorkerOf(s.daemon.ctx)!;
});
beforeEach(() => clock.set(Date.now() - 180_000));
afterEach(async () => {
  await worker.runDue();
});
afterAll(async () => {
  await s.stop();
  for (const r of receivers) await r.stop();
});

describe('webhook delivery', () => {
  it('delivers a signed event that the standardwebhooks package verifies', async () => {
    const r = await receiver();
    const ep = await endpoint(r.url);
    const ev = emit('intent.succeeded');
    await worker.runDue();
    expect(r.received).toHaveLength(1);
    const got = r.received[0];
    expect(got.headers['webhook-id']).toBe(ev.id);
    expect(got.headers['content-type']).toBe('application/json');
    const body = new Webhook(ep.signingSecret).verify(got.body, got.headers as Record<string, string>);
    expect(body).toEqual({ id: 'in_example', amount_in_cents: 1234, event_type: 'intent.succeeded', api_version: UNIFIED_API_VERSION });
    const [d] = await deliveries(ep.id);
    expect(d).toMatchObject({ event_id: ev.id, status: 'succeeded', attempt_count: 1, response_code: 200, next_attempt_at: null, connected: false });
  });

  it('carries the svix- headers with the same values, so a receiver written for the hosted service verifies it', async () => {
    const r = await receiver();
    const ep = await endpoint(r.url);
    const ev = emit('payment_intent.succeeded');
    await worker.runDue();
    const got = r.received[0];
    const h = got.headers as Record<string, string>;
    expect(h['svix-id']).toBe(ev.id);
    expect([h['svix-id'], h['svix-timestamp'], h['svix-signature']]).toEqual([h['webhook-id'], h['webhook-timestamp'], h['webhook-signature']]);
    // Each library is handed only its own family, as a receiver of that family would read them.
    const svixOnly = { 'svix-id': h['svix-id'], 'svix-timestamp': h['svix-timestamp'], 'svix-signature': h['svix-signature'] };
    const standardOnly = { 'webhook-id': h['webhook-id'], 'webhook-timestamp': h['webhook-timestamp'], 'webhook-signature': h['webhook-signature'] };
    const expected = { id: 'in_example', amount_in_cents: 1234, event_type: 'payment_intent.succeeded' };
    expect(new SvixWebhook(ep.signingSecret).verify(got.body, svixOnly)).toMatchObject(expected);
    expect(new Webhook(ep.signingSecret).verify(got.body, standardOnly)).toMatchObject(expected);
    // A tampered body fails under both.
    const tampered = got.body.replace('1234', '1235');
    expect(() => new SvixWebhook(ep.signingSecret).verify(tampered, svixOnly)).toThrow();
    expect(() => new Webhook(ep.signingSecret).verify(tampered, standardOnly)).toThrow();
  });

  it('lists each attempt with its status, duration and the first 1,024 bytes of the answer', async () => {
    const long = `${'é'.repeat(300)}${'x'.repeat(2_000)}`;
    const r = await receiver([
      { status: 500, body: long },
      { status: 200, body: '{"received":true}' },
      { status: 204, body: '' },
    ]);
    const ep = await endpoint(r.url);
    emit('intent.failed');
    await worker.runDue();
    emit('intent.succeeded');
    await worker.runDue();
    const [second, first] = await deliveries(ep.id);
    expect(first.attempts).toHaveLength(2);
    const [failed, ok] = first.attempts;
    expect(failed).toMatchObject({ attempt: 1, response_code: 500, error: null });
    // Cut at 1,024 bytes: 300 two-byte characters, then 424 of the rest.
    expect(Buffer.byteLength(failed.response_body)).toBe(1024);
    expect(failed.response_body).toBe(long.slice(0, 724));
    expect(ok).toMatchObject({ attempt: 2, response_code: 200, response_body: '{"received":true}' });
    for (const a of first.attempts) expect(a.duration_ms).toBeGreaterThanOrEqual(0);
    // No body: null.
    expect(second.attempts).toMatchObject([{ response_code: 204, response_body: null }]);
  });

  it('retries a failing receiver on schedule and sends the same webhook-id when it recovers', async () => {
    const r = await receiver([{ status: 500 }, { status: 503 }, { status: 500 }, { status: 200 }]);
    const ep = await endpoint(r.url);
    const ev = emit('intent.failed');
    await worker.runDue();
    // The first attempt and the immediate retry.
    expect(r.received).toHaveLength(2);
    let [d] = await deliveries(ep.id);
    expect(d).toMatchObject({ status: 'pending', attempt_count: 2, response_code: 503, last_error: 'http_503' });
    expect(Date.parse(d.next_attempt_at)).toBe(clock.now() + 60_000);

    clock.advance(59_000);
    await worker.runDue();
    expect(r.received).toHaveLength(2);
    clock.advance(1_000);
    await worker.runDue();
    expect(r.received).toHaveLength(3);
    [d] = await deliveries(ep.id);
    expect(Date.parse(d.next_attempt_at)).toBe(clock.now() + 300_000);

    clock.advance(300_000);
    await worker.runDue();
    expect(r.received).toHaveLength(4);
    [d] = await deliveries(ep.id);
    expect(d).toMatchObject({ status: 'succeeded', attempt_count: 4, response_code: 200, next_attempt_at: null, last_error: null });
    expect(d.attempts.map((a: { response_code: number }) => a.response_code)).toEqual([500, 503, 500, 200]);

    const wh = new Webhook(ep.signingSecret);
    for (const got of r.received) {
      expect(got.headers['webhook-id']).toBe(ev.id);
      expect(() => wh.verify(got.body, got.headers as Record<string, string>)).not.toThrow();
    }
    // Each attempt is signed when it is made.
    expect(Number(r.received[3].headers['webhook-timestamp']) - Number(r.received[0].headers['webhook-timestamp'])).toBe(360);
  });

  it('follows the whole schedule (immediately, 1 min, 5 min, 30 min, 2 h, 6 h) and then gives up', async () => {
    const r = await receiver([{ status: 500 }]);
    const ep = await endpoint(r.url);
    emit('intent.pending');
    await worker.runDue();
    const waits: number[] = [];
    for (;;) {
      const [d] = await deliveries(ep.id);
      if (d.status !== 'pending') {
        expect(d).toMatchObject({ status: 'failed', attempt_count: 7, next_attempt_at: null });
        break;
      }
      const wait = Date.parse(d.next_attempt_at) - clock.now();
      waits.push(wait);
      clock.advance(wait);
      await worker.runDue();
    }
    expect(waits).toEqual([60_000, 300_000, 1_800_000, 7_200_000, 21_600_000]);
    expect(r.received).toHaveLength(7);
  });

  it('counts a redirect as a failure and honours Retry-After', async () => {
    const r = await receiver([
      { status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } },
      { status: 429, headers: { 'retry-after': '600' } },
      { status: 204 },
    ]);
    const ep = await endpoint(r.url);
    emit('intent.canceled');
    await worker.runDue();
    expect(r.received).toHaveLength(2);
    const [d] = await deliveries(ep.id);
    expect(d.attempts.map((a: { response_code: number }) => a.response_code)).toEqual([302, 429]);
    // The schedule says 1 minute; the receiver asked for 10.
    expect(Date.parse(d.next_attempt_at)).toBe(clock.now() + 600_000);
    clock.advance(300_000);
    await worker.runDue();
    expect(r.received).toHaveLength(2);
    clock.advance(300_000);
    await worker.runDue();
    expect((await deliveries(ep.id))[0]).toMatchObject({ status: 'succeeded', response_code: 204 });
  });

  it('disables an endpoint that answers 410 and stops sending to it', async () => {
    const r = await receiver([{ status: 410 }]);
    const ep = await endpoint(r.url);
    emit('intent.succeeded');
    await worker.runDue();
    expect(r.received).toHaveLength(1);
    const got = await s.api('GET', `/webhook_endpoints/${ep.id}`);
    expect(got.body).toMatchObject({ disabled: true, disabled_reason: 'The receiver answered 410 Gone.' });
    expect((await deliveries(ep.id))[0]).toMatchObject({ status: 'failed', response_code: 410 });
    emit('intent.succeeded');
    await worker.runDue();
    expect(r.received).toHaveLength(1);
    expect(await deliveries(ep.id)).toHaveLength(1);
    const retry = await s.api('POST', `/webhook_endpoints/${ep.id}/deliveries/${(await deliveries(ep.id))[0].id}/retry`);
    expect(retry.status).toBe(422);
    expect(retry.body.code).toBe('webhook_endpoint_disabled');
  });

  it('resends one delivery now on request, with the same webhook-id', async () => {
    const r = await receiver([{ status: 200 }]);
    const ep = await endpoint(r.url);
    const ev = emit('transfer.sent');
    await worker.runDue();
    const [d] = await deliveries(ep.id);
    const res = await s.api('POST', `/webhook_endpoints/${ep.id}/deliveries/${d.id}/retry`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'succeeded', attempt_count: 2 });
    expect(res.body.attempts[1]).toMatchObject({ attempt: 2, manual: true, response_code: 200 });
    expect(r.received.map((x) => x.headers['webhook-id'])).toEqual([ev.id, ev.id]);
    expect((await s.api('POST', `/webhook_endpoints/${ep.id}/deliveries/whd_unknown/retry`)).status).toBe(404);
  });

  it('sends sandbox events only to the sandbox endpoints, and live events only to live ones', async () => {
    const sandboxR = await receiver();
    const liveR = await receiver();
    await endpoint(sandboxR.url);
    await endpoint(liveR.url, s.installation.keys.live);
    const sbx = emit('intent.succeeded');
    const live = emit('intent.succeeded', s.installation.account_id, true);
    await worker.runDue();
    expect(sandboxR.received.map((x) => x.headers['webhook-id'])).toEqual([sbx.id]);
    expect(liveR.received.map((x) => x.headers['webhook-id'])).toEqual([live.id]);
  });

  it("delivers a connected child's events to the platform with connected: true and account_id", async () => {
    const accounts = new AccountsService(s.daemon.ctx.db, clock);
    const child = accounts.createAccount({ name: 'Branch', parentId: s.installation.account_id });
    const platformR = await receiver();
    const childR = await receiver();
    const platformEp = await endpoint(platformR.url, s.installation.keys.live);
    const childKey = accounts.createKey({ accountId: child.account.id, environment: 'live' }).key;
    await endpoint(childR.url, childKey);
    const ev = emit('verification.completed', child.account.id, true, { id: 'ver_1', status: 'completed' });
    await worker.runDue();
    const atPlatform = new Webhook(platformEp.signingSecret).verify(platformR.received[0].body, platformR.received[0].headers as Record<string, string>);
    expect(atPlatform).toMatchObject({ id: 'ver_1', connected: true, account_id: child.account.id, event_type: 'verification.completed' });
    const atChild = JSON.parse(childR.received[0].body);
    expect(atChild.connected).toBeUndefined();
    expect(childR.received[0].headers['webhook-id']).toBe(ev.id);
    expect((await deliveries(platformEp.id, s.installation.keys.live))[0]).toMatchObject({ connected: true, account_id: child.account.id });
  });

  it('delivers an event re-emitted with the same id once', async () => {
    const r = await receiver();
    await endpoint(r.url);
    const event = {
      id: 'msg_fromstore0000001',
      type: 'cash_intent.succeeded',
      accountId: s.installation.sandbox_id,
      liveMode: false,
      payload: { id: 'ca_1' },
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    tx(s.daemon.ctx.db, () => reemitEvent(s.daemon.ctx, event));
    await worker.runDue();
    tx(s.daemon.ctx.db, () => reemitEvent(s.daemon.ctx, event));
    await worker.runDue();
    expect(r.received.map((x) => x.headers['webhook-id'])).toEqual(['msg_fromstore0000001']);
  });

  it('does not send events written before the endpoint existed', async () => {
    const r = await receiver();
    emit('intent.succeeded');
    await endpoint(r.url);
    const later = emit('intent.succeeded');
    await worker.runDue();
    expect(r.received.map((x) => x.headers['webhook-id'])).toEqual([later.id]);
  });

  it('refuses a name that resolves inward, at creation and again at delivery', async () => {
    const created = await s.api('POST', '/webhook_endpoints', { body: { url: 'http://inward.test/hooks' } });
    expect(created.status).toBe(400);
    expect(created.body.errors.url[0]).toMatch(/10\.9\.8\.7/);

    const ep = await endpoint('http://turns.test/hooks');
    dns['turns.test'] = '169.254.169.254';
    emit('intent.succeeded');
    await worker.runDue();
    const [d] = await deliveries(ep.id);
    expect(d.status).toBe('pending');
    expect(d.attempts[0].response_code).toBeNull();
    expect(d.attempts[0].error).toMatch(/^address_refused: .*169\.254\.169\.254/);
  });

  it('delivers to a name that resolves to an allow-listed address', async () => {
    const r = await receiver();
    const ep = await endpoint(r.url.replace('127.0.0.1', 'receiver.test'));
    emit('intent.succeeded');
    await worker.runDue();
    expect(r.received).toHaveLength(1);
    expect(r.received[0].headers.host).toMatch(/^receiver\.test:/);
    expect((await deliveries(ep.id))[0].status).toBe('succeeded');
  });
});
