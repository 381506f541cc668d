import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { tx } from '../../src/db/database.js';
import { accountsModule } from '../../src/modules/accounts/index.js';
import { createWebhooksModule, deliveryWorkerOf, type DeliveryWorker } from '../../src/modules/webhooks/index.js';

// The worker reads due deliveries ahead (up to 4 x concurrency) and sends them as slots free up,
// and reads answers with its own dispatch handler (post.ts). These tests hold a receiver's answer
// so rows sit read ahead, then change what they refer to; and answer with bodies and silences the
// handler must treat like undici's request() + dump({limit}) did.
// Long enough that a held answer released after a PATCH on a loaded box is not a timeout; the
// silent receiver's test waits this long once.
const TIMEOUT_MS = 2500;

let s: TestServer;
let worker: DeliveryWorker;
let server: Server;
let server2: Server;
let base: string;
let base2: string;
/** Requests by path, and the answers held back (released by the test). */
const arrived = new Map<string, IncomingMessage[]>();
const held: Array<() => void> = [];
let onArrive: (() => void) | undefined;

function handle(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  req.on('end', () => {
    const path = req.url ?? '/';
    arrived.set(path, [...(arrived.get(path) ?? []), req]);
    onArrive?.();
    if (path === '/hold') held.push(() => res.end('ok'));
    else if (path === '/big-ok')
      res.end(Buffer.alloc(1024 * 1024, 97)); // 1 MB, past the 64 KB read limit
    else if (path === '/big-503') {
      res.writeHead(503, { 'Retry-After': '120' });
      res.end(Buffer.alloc(1024 * 1024, 97));
    } else if (path === '/silent') {
      // Never answers: the whole-attempt deadline ends it.
    } else res.end('ok');
  });
}

function emit(n: number): void {
  tx(s.daemon.ctx.db, () => {
    for (let i = 0; i < n; i++)
      s.daemon.ctx.outbox.emit({ type: 'intent.succeeded', accountId: s.installation.sandbox_id, liveMode: false, payload: { id: `in_${i}` } });
  });
}

async function endpoint(path: string): Promise<string> {
  const res = await s.api('POST', '/webhook_endpoints', { key: s.installation.keys.test, body: { url: `${base}${path}` } });
  expect(res.status).toBe(201);
  return res.body.id;
}

/** An endpoint on the second receiver (another origin). */
async function endpoint2(path: string): Promise<string> {
  const res = await s.api('POST', '/webhook_endpoints', { key: s.installation.keys.test, body: { url: `${base2}${path}` } });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function deliveries(endpointId: string): Promise<Array<Record<string, any>>> {
  const res = await s.api('GET', `/webhook_endpoints/${endpointId}/deliveries`, { key: s.installation.keys.test });
  expect(res.status).toBe(200);
  return res.body;
}

function arrival(path: string, n: number): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if ((arrived.get(path)?.length ?? 0) >= n) {
        onArrive = undefined;
        resolve();
      }
    };
    onArrive = check;
    check();
  });
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  server2 = createServer(handle);
  await new Promise<void>((r) => server2.listen(0, '127.0.0.1', r));
  base2 = `http://127.0.0.1:${(server2.address() as AddressInfo).port}`;
  s = await startTestServer({
    // One slot: while the first delivery is held, the others wait read ahead.
    config: { webhooks: { allow_cidrs: ['127.0.0.1/32'], concurrency: 1, timeout_ms: TIMEOUT_MS } },
    modules: [accountsModule, createWebhooksModule()],
  });
  worker = deliveryWorkerOf(s.daemon.ctx)!;
});

afterAll(async () => {
  for (const release of held.splice(0)) release();
  await s.stop();
  for (const srv of [server, server2]) {
    srv.closeAllConnections();
    await new Promise((r) => srv.close(r));
  }
});

describe('deliveries read ahead', () => {
  it('sends none of them once their endpoint is disabled', async () => {
    const ep = await endpoint('/hold');
    emit(5);
    await arrival('/hold', 1);
    // The first is on the wire; the other four have been read ahead (or are about to be).
    const patch = await s.api('PATCH', `/webhook_endpoints/${ep}`, { key: s.installation.keys.test, body: { disabled: true } });
    expect(patch.status).toBe(200);
    held.shift()!();
    await worker.runDue();
    expect(arrived.get('/hold')).toHaveLength(1);
    const list = await deliveries(ep);
    expect(list.map((d) => d.status).sort()).toEqual(['canceled', 'canceled', 'canceled', 'canceled', 'succeeded']);
  });

  it('sends none of them once their endpoint is deleted, and carries on with the next endpoint', async () => {
    const ep = await endpoint('/hold');
    const other = await endpoint('/other');
    arrived.delete('/hold');
    emit(3);
    await arrival('/hold', 1);
    const del = await s.api('DELETE', `/webhook_endpoints/${ep}`, { key: s.installation.keys.test });
    expect(del.status).toBe(200);
    held.shift()!();
    await worker.runDue();
    expect(arrived.get('/hold')).toHaveLength(1);
    expect(arrived.get('/other')).toHaveLength(3);
    expect((await deliveries(other)).every((d) => d.status === 'succeeded')).toBe(true);
    // Clean up for the next test: this endpoint is not part of it.
    await s.api('DELETE', `/webhook_endpoints/${other}`, { key: s.installation.keys.test });
  });

  it('does not send one again that a manual retry sent meanwhile', async () => {
    // Two endpoints on two origins (the agent keeps one connection per slot and origin): one
    // event's delivery to `hold` takes the only slot, its delivery to the other origin waits read
    // ahead. Due rows of one moment go in endpoint id order: make `hold` the first.
    const hold = await endpoint('/hold');
    let other = await endpoint2('/retried');
    while (other < hold) {
      await s.api('DELETE', `/webhook_endpoints/${other}`, { key: s.installation.keys.test });
      other = await endpoint2('/retried');
    }
    arrived.delete('/hold');
    emit(1);
    await arrival('/hold', 1);
    const [waiting] = await deliveries(other);
    expect(waiting).toMatchObject({ status: 'pending', attempt_count: 0 });
    const retry = await s.api('POST', `/webhook_endpoints/${other}/deliveries/${waiting.id}/retry`, { key: s.installation.keys.test });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    held.shift()!();
    await worker.runDue();
    expect(arrived.get('/retried')).toHaveLength(1);
    expect((await deliveries(other))[0]).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    await s.api('DELETE', `/webhook_endpoints/${hold}`, { key: s.installation.keys.test });
    await s.api('DELETE', `/webhook_endpoints/${other}`, { key: s.installation.keys.test });
  });
});

describe('answers', () => {
  it('counts a 2xx status line whose body is longer than the read limit', async () => {
    const ep = await endpoint('/big-ok');
    emit(1);
    await worker.runDue();
    const [d] = await deliveries(ep);
    expect(d).toMatchObject({ status: 'succeeded', response_code: 200, attempt_count: 1 });
    await s.api('DELETE', `/webhook_endpoints/${ep}`, { key: s.installation.keys.test });
  });

  it('reads Retry-After from a failed answer with a long body', async () => {
    const ep = await endpoint('/big-503');
    const before = s.daemon.ctx.clock.now();
    emit(1);
    await worker.runDue();
    const [d] = await deliveries(ep);
    // The schedule's first retry is immediate; the 120 s asked for postpones it.
    expect(d).toMatchObject({ status: 'pending', response_code: 503, last_error: 'http_503' });
    expect(Date.parse(d.next_attempt_at) - before).toBeGreaterThanOrEqual(120_000);
    await s.api('DELETE', `/webhook_endpoints/${ep}`, { key: s.installation.keys.test });
  });

  it('records a timeout for a receiver that never answers', async () => {
    const ep = await endpoint('/silent');
    emit(1);
    await arrival('/silent', 1);
    await worker.runDue();
    const [d] = await deliveries(ep);
    expect(d.attempts[0]).toMatchObject({ response_code: null, error: `timeout: no complete response within ${TIMEOUT_MS} ms` });
    await s.api('DELETE', `/webhook_endpoints/${ep}`, { key: s.installation.keys.test });
  });
});
