import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Issue 17, hole 1: the tax certifier is an outbound URL like any other: a loopback or private
// certifier is not reached unless `webhooks.allow_cidrs` admits it.
let s: TestServer;
let certifier: Server;
let hits = 0;

beforeAll(async () => {
  certifier = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ document_id: 'DTE-1', url: 'https://fel.example/1' }));
  });
  await new Promise<void>((r) => certifier.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(certifier.address() as AddressInfo).port}/issue`;
  s = await startTestServer({ config: { money: { tax_invoicing: { provider: 'http', url, timeout_ms: 2000, retry_interval_ms: 3_600_000 } } } });
});
afterAll(async () => {
  await s.stop();
  certifier.close();
});

describe('the tax certifier behind the outbound guard', () => {
  it('does not reach a loopback certifier that is not allow-listed; the sale still goes through, the invoice waits', async () => {
    const res = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 5000, tax_id: 'CF' } });
    expect(res.status).toBe(201);
    expect(res.body.tax_invoice_url).toBeNull();
    expect(hits).toBe(0);
    const [pending] = s.daemon.ctx.db.prepare('SELECT * FROM tax_invoices WHERE intent_id = ?').all(res.body.id) as any[];
    expect(pending.status).toBe('pending');
    expect(pending.last_error).toMatch(/address_refused/);
  });
});
