import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { tx } from '../../src/db/database.js';
import { accountsModule } from '../../src/modules/accounts/index.js';
import { createWebhooksModule, deliveryWorkerOf, type DeliveryWorker } from '../../src/modules/webhooks/index.js';

// Isolation with the default settings (issue 35): a hung endpoint holds only its own cap of the
// worker's slots, and its slow attempts open its breaker before they time out.
const clock = new ManualClock();
let s: TestServer;
let worker: DeliveryWorker;
const hung = new Receiver([{ status: 200, hold: true }]);
const healthy = new Receiver();
const second = new Receiver([{ status: 200, hold: true }]);

async function endpoint(url: string): Promise<string> {
  const res = await s.api('POST', '/webhook_endpoints', { key: s.installation.keys.test, body: { url } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

function emit(n: number): void {
  tx(s.daemon.ctx.db, () => {
    for (let i = 0; i < n; i++) {
      s.daemon.ctx.outbox.emit({
        type: 'intent.succeeded',
        accountId: s.installation.sandbox_id,
        liveMode: false,
        payload: { id: `in_${i}`, amount_in_cents: 1 },
      });
    }
  });
}

beforeAll(async () => {
  await hung.start();
  await healthy.start();
  clock.set(Date.now());
  // Only the receivers' address is allowed: every gate setting is the default one.
  s = await startTestServer({ clock, config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } }, modules: [accountsModule, createWebhooksModule()] });
  worker = deliveryWorkerOf(s.daemon.ctx)!;
});
afterAll(async () => {
  await s.stop();
  await hung.stop();
  await healthy.stop();
  await second.stop();
});

/**
 * Lets real I/O run while the manual clock moves 10 ms a step (held-back rows are rescheduled a few
 * ms of the clock ahead), until `done` or 100 steps: at most 1 s of the clock, under slow_ms.
 */
async function pump(done: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !done(); i++) {
    clock.advance(10);
    worker.wake();
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('a hung endpoint beside a healthy one, default settings', () => {
  it('the healthy endpoint receives every delivery while the hung one holds only its cap', async () => {
    const cfg = s.daemon.ctx.config.webhooks;
    expect(cfg.endpoint_max_in_flight).toBeGreaterThan(0);
    expect(cfg.endpoint_max_in_flight).toBeLessThan(cfg.concurrency);
    const hungId = await endpoint(hung.url);
    await endpoint(healthy.url);
    // More events than the worker has slots: without the cap the hung endpoint would take them all.
    const n = cfg.concurrency * 3;
    emit(n);
    await pump(() => healthy.received.length >= n && hung.holding >= cfg.endpoint_max_in_flight);
    expect(healthy.received).toHaveLength(n);
    expect(hung.holding).toBe(cfg.endpoint_max_in_flight);
    expect(hung.maxActive).toBe(cfg.endpoint_max_in_flight);
    expect(worker.inFlightOf(hungId)).toBe(cfg.endpoint_max_in_flight);
    // The rows its cap holds back wait in memory (decision 0262): none was rescheduled ahead of the clock.
    const ahead = s.daemon.ctx.db
      .prepare(`SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'pending' AND next_attempt_ms > ?`)
      .pluck()
      .get(hungId, clock.now());
    expect(ahead).toBe(0);
  });

  it('attempts in flight past slow_ms open its breaker before their timeout', async () => {
    const cfg = s.daemon.ctx.config.webhooks;
    expect(cfg.slow_ms).toBeLessThan(cfg.timeout_ms);
    await second.start();
    const id = await endpoint(second.url);
    emit(cfg.endpoint_max_in_flight);
    await pump(() => second.holding >= cfg.endpoint_max_in_flight);
    expect(second.holding).toBe(cfg.endpoint_max_in_flight);
    // In flight under 1 s of the clock: not yet a failure signal.
    expect(worker.breakerOpen(id)).toBe(false);
    clock.advance(cfg.slow_ms);
    emit(1);
    await pump(() => worker.breakerOpen(id));
    expect(worker.breakerOpen(id)).toBe(true);
    // Nothing more was sent to it: its deliveries wait for the probe.
    expect(second.received).toHaveLength(cfg.endpoint_max_in_flight);
  });
});
