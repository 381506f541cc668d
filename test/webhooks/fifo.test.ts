import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver, type Reply } from '../helpers/receiver.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { tx } from '../../src/db/database.js';
import { accountsModule } from '../../src/modules/accounts/index.js';
import { createWebhooksModule, deliveryWorkerOf, type DeliveryWorker } from '../../src/modules/webhooks/index.js';

// First-in-first-out delivery per endpoint (docs/webhooks.md), over real HTTP to a real receiver
// that holds every answer until the test releases it: the worker runs on its own (no runDue, which
// would wait for the held answers), and each step waits for a request to arrive.
const clock = new ManualClock();
let s: TestServer;
let worker: DeliveryWorker;
const receivers: Receiver[] = [];

async function receiver(replies: Reply[]): Promise<Receiver> {
  const r = new Receiver(replies);
  await r.start();
  receivers.push(r);
  return r;
}

async function endpoint(url: string, extra: Record<string, unknown> = {}): Promise<{ id: string; fifo: boolean; signingSecret: string }> {
  const res = await s.api('POST', '/webhook_endpoints', { body: { url, ...extra } });
  expect(res.status).toBe(201);
  return res.body;
}

/** Events in one transaction; their ids in event order. */
function emit(n: number): string[] {
  return tx(s.daemon.ctx.db, () =>
    Array.from(
      { length: n },
      (_, i) =>
        s.daemon.ctx.outbox.emit({
          type: 'intent.succeeded',
          accountId: s.installation.sandbox_id,
          liveMode: false,
          payload: { id: `in_${i}`, amount_in_cents: i + 1 },
        }).id,
    ),
  );
}

/** The endpoint's pending deliveries with a schedule: a FIFO endpoint has at most one (its head). */
function heads(endpointId: string): number {
  return s.daemon.ctx.db
    .prepare("SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'pending' AND next_attempt_ms IS NOT NULL")
    .pluck()
    .get(endpointId) as number;
}

/**
 * Lets the daemon run its pending passes (a round trip through its HTTP server), then checks that
 * exactly `n` requests have arrived: a worker that sent a later delivery early would have sent it
 * in the pass that sent the one now held.
 */
async function exactly(r: Receiver, n: number, endpointId: string): Promise<void> {
  await r.waitFor(n);
  await s.api('GET', `/webhook_endpoints/${endpointId}`);
  expect(r.received).toHaveLength(n);
  expect(r.holding).toBe(1);
  expect(heads(endpointId)).toBeLessThanOrEqual(1);
}

function attemptsOf(endpointId: string, eventId: string): number {
  return s.daemon.ctx.db.prepare('SELECT attempts FROM webhook_deliveries WHERE endpoint_id = ? AND event_id = ?').pluck().get(endpointId, eventId) as number;
}

const idsOf = (r: Receiver) => r.received.map((q) => q.headers['webhook-id']);

beforeAll(async () => {
  s = await startTestServer({
    clock,
    // Three automatic attempts (now, now, 1 s later), then given up.
    // The breaker (on by default) would hold the failing receiver's retries: these tests count them.
    config: { webhooks: { allow_cidrs: ['127.0.0.1/32'], concurrency: 8, retry_delays_ms: [0, 1000], breaker_failures: 0 } },
    modules: [accountsModule, createWebhooksModule()],
  });
  worker = deliveryWorkerOf(s.daemon.ctx)!;
});
beforeEach(() => clock.set(Date.now()));
afterAll(async () => {
  for (const r of receivers) while (r.holding > 0) r.release(200);
  await s.stop();
  for (const r of receivers) await r.stop();
});

describe('first-in-first-out delivery', () => {
  it('sends one delivery at a time, in event order, and holds the next behind a retry', { timeout: 30_000 }, async () => {
    const r = await receiver([{ status: 200, hold: true }]);
    const ep = await endpoint(r.url, { fifo: true });
    expect(ep.fifo).toBe(true);
    const events = emit(5);

    await exactly(r, 1, ep.id);
    // The first event fails once: its retry (due at once) comes before the second event.
    r.release(500);
    await exactly(r, 2, ep.id);
    r.release(200);
    for (let n = 3; n <= 6; n++) {
      await exactly(r, n, ep.id);
      r.release(200);
    }
    expect(idsOf(r)).toEqual([events[0], ...events]);
    expect(r.maxActive).toBe(1);
    // Each verifies with the endpoint's secret (Standard Webhooks).
    const wh = new Webhook(ep.signingSecret);
    for (const q of r.received) wh.verify(q.body, q.headers as Record<string, string>);

    await expect
      .poll(async () => (await s.api('GET', `/webhook_endpoints/${ep.id}/deliveries`)).body.map((d: { status: string }) => d.status))
      .toEqual(Array(5).fill('succeeded'));
    const ds = (await s.api('GET', `/webhook_endpoints/${ep.id}/deliveries`)).body as Array<{ event_id: string; attempt_count: number }>;
    expect(ds.find((d) => d.event_id === events[0])!.attempt_count).toBe(2);
    await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { body: { disabled: true } });
  });

  it('moves on once a delivery is given up after its retries; a replay joins the end of the order', { timeout: 30_000 }, async () => {
    const r = await receiver([{ status: 200, hold: true }]);
    const ep = await endpoint(r.url, { fifo: true });
    const events = emit(3);

    await exactly(r, 1, ep.id);
    r.release(503);
    await exactly(r, 2, ep.id);
    r.release(503);
    // The third attempt is due 1 s later (clock time); the next event still waits.
    // Once the second failure is recorded (its retry scheduled from the clock's now), move the clock.
    await expect.poll(() => attemptsOf(ep.id, events[0])).toBe(2);
    expect(heads(ep.id)).toBe(1);
    await s.api('GET', `/webhook_endpoints/${ep.id}`);
    expect(r.received).toHaveLength(2);
    clock.advance(1000);
    worker.wake();
    await exactly(r, 3, ep.id);
    r.release(503);
    // Given up: the second event goes, then the third.
    await exactly(r, 4, ep.id);
    r.release(200);
    await exactly(r, 5, ep.id);

    // A replay of the failed event while the third is in flight is sent after it.
    const replay = await s.api('POST', `/webhook_endpoints/${ep.id}/replays`, { body: { statuses: ['failed'] } });
    expect(replay.status).toBe(201);
    expect(replay.body.total).toBe(1);
    await s.api('GET', `/webhook_endpoints/${ep.id}`);
    expect(r.received).toHaveLength(5);
    r.release(200);
    await exactly(r, 6, ep.id);
    r.release(200);
    expect(idsOf(r)).toEqual([events[0], events[0], events[0], events[1], events[2], events[0]]);
    expect(r.maxActive).toBe(1);
    await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { body: { disabled: true } });
  });

  it('turned off by PATCH, the deliveries waiting their turn all become due', { timeout: 30_000 }, async () => {
    const r = await receiver([{ status: 200, hold: true }]);
    const ep = await endpoint(r.url, { fifo: true });
    emit(4);
    await exactly(r, 1, ep.id);
    const patched = await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { body: { fifo: false } });
    expect(patched.body.fifo).toBe(false);
    // The three parked ones go at once, beside the one still held.
    await r.waitFor(4);
    expect(r.holding).toBe(4);
    while (r.holding > 0) r.release(200);
    // And on again: new events are in order again.
    expect((await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { body: { fifo: true } })).body.fifo).toBe(true);
    const later = emit(2);
    await exactly(r, 5, ep.id);
    r.release(200);
    await exactly(r, 6, ep.id);
    r.release(200);
    expect(idsOf(r).slice(4)).toEqual(later);
    await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { body: { disabled: true } });
  });

  it('is off by default and in the OpenAPI document', async () => {
    const r = await receiver([{ status: 200 }]);
    const ep = await endpoint(r.url);
    expect(ep.fifo).toBe(false);
    const doc = JSON.parse(await (await fetch(`${s.url}/openapi.json`)).text());
    const text = JSON.stringify(doc);
    expect(text).toContain('First-in-first-out delivery (default false)');
    await s.api('PATCH', `/webhook_endpoints/${ep.id}`, { body: { disabled: true } });
  });
});
