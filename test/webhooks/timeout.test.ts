import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { tx } from '../../src/db/database.js';
import { accountsModule } from '../../src/modules/accounts/index.js';
import { createWebhooksModule, deliveryWorkerOf, type DeliveryWorker } from '../../src/modules/webhooks/index.js';

// The whole-attempt limit (webhooks.timeout_ms, from connecting to the last byte) is shared by the
// attempts started close together; a receiver that answers at once and then drips its body, each
// chunk well inside the agent's per-chunk bodyTimeout, must still be cut off by it. Its status line
// has arrived by then: a 2xx head counts as the answer (docs/webhooks.md), so the attempt succeeds.
const TIMEOUT_MS = 400;

let s: TestServer;
let worker: DeliveryWorker;
let server: Server;
let url: string;
const timers = new Set<NodeJS.Timeout>();
/** Answers the receiver finished sending: none may have when the attempts are over. */
let completed = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' });
    // 40 chunks 100 ms apart: the answer would complete, a 200, after 4 s without the limit.
    let n = 0;
    const t = setInterval(() => {
      if (res.destroyed || ++n > 40) {
        clearInterval(t);
        timers.delete(t);
        if (!res.destroyed) completed++;
        res.end();
        return;
      }
      res.write('.');
    }, 100);
    timers.add(t);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  s = await startTestServer({
    // Only the time limit is under test: no breaker, no slow-attempt signal.
    config: { webhooks: { allow_cidrs: ['127.0.0.1/32'], timeout_ms: TIMEOUT_MS, breaker_failures: 0, slow_ms: 0 } },
    modules: [accountsModule, createWebhooksModule()],
  });
  worker = deliveryWorkerOf(s.daemon.ctx)!;
});

afterAll(async () => {
  await s.stop();
  for (const t of timers) clearInterval(t);
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('webhook attempt time limit', () => {
  it('ends attempts whose answer drips past the whole-attempt limit, every one recorded', async () => {
    const res = await s.api('POST', '/webhook_endpoints', { key: s.installation.keys.test, body: { url } });
    expect(res.status).toBe(201);
    // Three deliveries started together share one deadline.
    tx(s.daemon.ctx.db, () => {
      for (let i = 0; i < 3; i++) {
        s.daemon.ctx.outbox.emit({ type: 'intent.succeeded', accountId: s.installation.sandbox_id, liveMode: false, payload: { id: `in_${i}` } });
      }
    });
    await worker.runDue();
    const attempts = s.daemon.ctx.db
      .prepare(`SELECT a.error, a.response_code, d.status FROM webhook_attempts a JOIN webhook_deliveries d ON d.seq = a.delivery_seq WHERE d.endpoint_id = ?`)
      .all(res.body.id) as Array<{ error: string | null; response_code: number | null; status: string }>;
    expect(attempts).toHaveLength(3);
    // The attempts are over while the receiver is still dripping: the limit ended them.
    expect(completed).toBe(0);
    for (const a of attempts) {
      expect(a.response_code).toBe(200);
      expect(a.error).toBeNull();
      expect(a.status).toBe('succeeded');
    }
  });
});
