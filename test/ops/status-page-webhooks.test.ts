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

describe('status page with the real webhooks area', () => {
  it('lists a failing delivery and resends it with the button once the receiver recovers', async () => {
    let answer = 503;
    const seen: string[] = [];
    receiver = createServer((req, res) => {
      seen.push(String(req.headers['webhook-id']));
      res.writeHead(answer).end();
    }).listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const port = (receiver.address() as { port: number }).port;
    server = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
    const hash = await hashPassword(PASSWORD);
    tx(server.daemon.ctx.db, () => setManagerPassword(server!.daemon.ctx.db, hash));

    const endpoint = await server.api('POST', '/webhook_endpoints', { body: { url: `http://127.0.0.1:${port}/hook`, description: 'ERP' } });
    expect(endpoint.status).toBe(201);
    const sale = await server.api('POST', '/cash_sales', { body: { amount_in_cents: 1500 } });
    expect(sale.status).toBe(201);
    const worker = deliveryWorkerOf(server.daemon.ctx)!;
    // The first attempt is immediate; wait for it to be recorded as failed.
    for (let i = 0; i < 200 && seen.length === 0; i++) {
      await worker.runDue();
      if (seen.length === 0) await once(receiver, 'request');
    }
    expect(seen.length).toBeGreaterThanOrEqual(1);

    const page = new PageClient(server.url);
    await page.login(PASSWORD);
    const status = await page.get('/');
    expect(status.text).toMatch(/<section id="webhooks" data-state="ok">/);
    expect(status.text).toContain(`http://127.0.0.1:${port}/hook`);
    const action = /action="(\/ops\/deliveries\/[^"]+\/resend)"/.exec(status.text);
    expect(action).not.toBeNull();

    answer = 204;
    const before = seen.length;
    const done = await page.post(action![1], { _csrf: PageClient.csrf(status.text) });
    expect(done.status).toBe(303);
    expect(seen.length).toBe(before + 1);
    // Same event, same webhook-id on the resend.
    expect(new Set(seen).size).toBe(1);
    const after = await page.get(done.headers.location as string);
    expect(after.text).toContain('Every delivery is going through.');
  });
});
