import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { PageClient } from '../helpers/page-client.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';

const PASSWORD = 'manager of the box';
let server: TestServer | undefined;
let receiver: Server | undefined;
afterEach(async () => {
  await server?.stop();
  receiver?.close();
  server = undefined;
  receiver = undefined;
});

const deliveryStatuses = async (endpointId: string) =>
  ((await server!.api('GET', `/webhook_endpoints/${endpointId}/deliveries`)).body as Array<{ status: string }>).map((d) => d.status).sort();

describe('status page with the real webhooks area', () => {
  it("groups an endpoint's failures in one line with a count, greys them once it answers again, and resends them with its one button", async () => {
    let answer = 503;
    const seen: string[] = [];
    receiver = createServer((req, res) => {
      seen.push(String(req.headers['webhook-id']));
      res.writeHead(answer).end();
    }).listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const port = (receiver.address() as { port: number }).port;
    // Two automatic attempts (now, then at once again), then a delivery is given up: `failed`.
    server = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'], retry_delays_ms: [0], breaker_failures: 0 } } });
    const hash = await hashPassword(PASSWORD);
    tx(server.daemon.ctx.db, () => setManagerPassword(server!.daemon.ctx.db, hash));

    const endpoint = await server.api('POST', '/webhook_endpoints', { body: { url: `http://127.0.0.1:${port}/hook`, description: 'ERP' } });
    expect(endpoint.status).toBe(201);
    for (const amount of [1500, 1600, 1700]) expect((await server.api('POST', '/cash_sales', { body: { amount_in_cents: amount } })).status).toBe(201);
    const worker = deliveryWorkerOf(server.daemon.ctx)!;
    await expect
      .poll(
        async () => {
          await worker.runDue();
          return deliveryStatuses(endpoint.body.id);
        },
        { timeout: 20_000 },
      )
      .toEqual(['failed', 'failed', 'failed']);

    const page = new PageClient(server.url);
    await page.login(PASSWORD);
    const status = await page.get('/');
    expect(status.text).toMatch(/<section id="webhooks" data-state="ok">/);
    expect(status.text).toContain(`http://127.0.0.1:${port}/hook`);
    const line = /<article class="endpoint"[^>]*data-state="(\w+)">([\s\S]*?)<\/article>/.exec(status.text)!;
    expect(line[1]).toBe('failing');
    expect(line[2]).toMatch(
      /<p class="bad" data-count="3">3 failed deliveries, last: [a-z_]+\.[a-z_]+ 503 at <time datetime="[^"]+Z" title="[^"]+">\d\d:\d\d, (just now|\d+ s ago)<\/time><\/p>/,
    );
    expect(status.text.match(/Resend the 3 failed/g)).toHaveLength(1);

    // The receiver is back: a new sale goes through, so the old failures are history, shown greyed.
    answer = 204;
    expect((await server.api('POST', '/cash_sales', { body: { amount_in_cents: 1800 } })).status).toBe(201);
    await expect
      .poll(
        async () => {
          await worker.runDue();
          return deliveryStatuses(endpoint.body.id);
        },
        { timeout: 20_000 },
      )
      .toEqual(['failed', 'failed', 'failed', 'succeeded']);
    const recovered = await page.get('/');
    const greyed = /<article class="endpoint"[^>]*data-state="(\w+)">([\s\S]*?)<\/article>/.exec(recovered.text)!;
    expect(greyed[1]).toBe('recovered');
    expect(greyed[2]).toMatch(/<p class="stale" data-count="3">3 failed deliveries, .*; the endpoint answers again<\/p>/);

    // The endpoint's one button: the bulk replay of its failed deliveries, the same webhook-ids.
    const before = seen.length;
    const firstIds = new Set(seen.slice(0, 6));
    const action = /action="(\/ops\/endpoints\/[^"]+\/replay)"/.exec(recovered.text)![1];
    const since = /name="since" value="([^"]+)"/.exec(recovered.text)![1];
    const done = await page.post(action, { _csrf: PageClient.csrf(recovered.text), since });
    expect(done.status).toBe(303);
    expect(decodeURIComponent(String(done.headers.location))).toContain('Replaying 3 failed deliveries');
    await expect
      .poll(
        async () => {
          await worker.runDue();
          return deliveryStatuses(endpoint.body.id);
        },
        { timeout: 20_000 },
      )
      .toEqual(['failed', 'failed', 'failed', 'succeeded', 'succeeded', 'succeeded', 'succeeded']);
    // The failed rows stay as they were (the replay made new deliveries of their events): the page
    // counts an event settled once it was delivered again.
    expect(seen.slice(before)).toHaveLength(3);
    for (const id of seen.slice(before)) expect(firstIds.has(id)).toBe(true);
    const after = await page.get('/');
    expect(after.text).toContain('Every delivery is going through.');
  });
});
