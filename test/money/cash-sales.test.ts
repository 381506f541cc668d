import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { shapeDiff } from '../helpers/shape.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AccountsService } from '../../src/accounts/service.js';
import { retryPendingTaxInvoices } from '../../src/modules/tax-invoices/service.js';
import { NO_LIVE_CERTIFIER } from '../../src/modules/tax-invoices/provider.js';
import { statusView } from '../../src/modules/ops/panels.js';
import { statusPage } from '../../src/modules/ops/page.js';
import { runDoctor } from '../../src/modules/ops/doctor.js';
import { catalogueEntry } from '../../src/events/catalogue.js';
import { count, rows } from './helpers.js';

/** A real certifier over HTTP that answers like the sandbox one, optionally holding each request until released. */
async function startProvider(port = 0, opts: { hold?: boolean } = {}) {
  const received: Array<{ body: any; headers: IncomingMessage['headers'] }> = [];
  const held: Array<() => void> = [];
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text);
    received.push({ body, headers: req.headers });
    server.emit('received');
    if (opts.hold) await new Promise<void>((r) => held.push(r));
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ document_id: `DOC-${body.invoice_id}`, url: `https://dte.test/${body.invoice_id}` }));
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return {
    server,
    received,
    port: (server.address() as AddressInfo).port,
    release: () => held.splice(0).forEach((r) => r()),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * Where two payloads differ in keys or JSON types, nested; null on either side matches any type
 * (a nullable field that happens to be empty in one of them).
 */
async function freePort(): Promise<number> {
  const p = await startProvider();
  await p.close();
  return p.port;
}

describe('cash sales with the sandbox provider', () => {
  let s: TestServer;
  let legacyChild: string;
  beforeAll(async () => {
    s = await startTestServer();
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    legacyChild = accounts.createAccount({ name: 'Legacy', parentId: s.installation.account_id, eventFormat: 'both' }).account.id;
  });
  afterAll(() => s.stop());

  it('records the sale with no fee, no ledger row and the balance untouched', async () => {
    const ledger = count(s, 'balance_transactions');
    const before = await s.api('GET', '/balances');
    const res = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 2500, description: 'Two coffees' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      status: 'succeeded',
      amount_in_cents: 2500,
      currency: 'GTQ',
      description: 'Two coffees',
      tax_id: null,
      tax_invoice_url: null,
      checkout: { status: 'paid', latest_intent: { id: res.body.id } },
    });
    expect(res.body.id).toMatch(/^in_[0-9a-z]{16}$/);
    expect(res.body.cash_intent_id).toMatch(/^ca_[0-9a-z]{16}$/);
    expect(count(s, 'balance_transactions')).toBe(ledger);
    expect((await s.api('GET', '/balances')).body).toEqual(before.body);

    const intent = await s.api('GET', `/intents/${res.body.id}`);
    expect(intent.body).toMatchObject({
      type: 'cash',
      status: 'succeeded',
      legacy_id: res.body.cash_intent_id,
      checkout: { id: res.body.checkout.id, status: 'paid' },
    });
    const events = rows(s, 'SELECT type, payload FROM events WHERE object_id IN (?, ?)', res.body.id, res.body.cash_intent_id);
    expect(events.map((e) => e.type)).toEqual(['intent.succeeded']);
    expect(JSON.parse(events[0].payload)).toEqual(intent.body);
    const [sync] = rows(s, `SELECT * FROM sync_outbox WHERE kind = 'cash_sale' AND id = ?`, `sync_${res.body.cash_intent_id}`);
    expect(JSON.parse(sync.payload).sale.id).toBe(res.body.id);
    expect((await s.api('GET', `/checkouts/${res.body.checkout.id}`)).body.status).toBe('paid');
  });

  it('emits cash_intent.succeeded with the ca_ id for a legacy-format account', async () => {
    const res = await s.api('POST', '/cash_sales', {
      key: s.installation.keys.live,
      headers: { 'x-account-id': legacyChild },
      body: { amount_in_cents: 1000, currency: 'USD' },
    });
    expect(res.status).toBe(201);
    const events = rows(s, 'SELECT type, payload FROM events WHERE account_id = ? ORDER BY seq', legacyChild);
    expect(events.map((e) => e.type)).toEqual(['intent.succeeded', 'cash_intent.succeeded']);
    expect(JSON.parse(events[1].payload)).toMatchObject({
      id: res.body.cash_intent_id,
      event_type: 'cash_intent.succeeded',
      amount_in_cents: 1000,
      currency: 'USD',
    });
    expect(JSON.parse(events[0].payload)).toMatchObject({ id: res.body.id, type: 'cash', live_mode: true });
    // Issue 15: the fee and payment-method fields of every legacy payment event, in the test-send's shape.
    const legacy = JSON.parse(events[1].payload);
    expect(legacy).toMatchObject({
      fee: 0,
      vat_withheld: 0,
      vat_withheld_currency: 'USD',
      failure_reason: null,
      checkout: { payment_method: { type: 'cash', card: null } },
    });
    const example = catalogueEntry('cash_intent.succeeded')!.example!({ accountId: legacyChild, liveMode: true, createdAt: legacy.created_at });
    expect(shapeDiff(legacy, example)).toEqual([]);
  });

  it('issues a tax invoice through the sandbox provider when a tax_id is given', async () => {
    const res = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 11_200, tax_id: '1234567-8' } });
    expect(res.status).toBe(201);
    expect(res.body.tax_invoice_url).toMatch(/\/tax_invoices\/DTE-[0-9A-F]{16}$/);
    expect((await s.api('GET', `/intents/${res.body.id}`)).body.tax_invoice_url).toBe(res.body.tax_invoice_url);
    const [inv] = rows(s, 'SELECT * FROM tax_invoices WHERE intent_id = ?', res.body.id);
    expect(inv).toMatchObject({ status: 'issued', tax_id: '1234567-8' });
  });

  it('a live sale never gets a fabricated tax invoice without a certifier; status page and doctor say why (issue 15)', async () => {
    const res = await s.api('POST', '/cash_sales', { key: s.installation.keys.live, body: { amount_in_cents: 4_000, tax_id: '555-1' } });
    expect(res.status).toBe(201);
    expect(res.body.tax_invoice_url).toBeNull();
    expect((await s.api('GET', `/intents/${res.body.id}`, { key: s.installation.keys.live })).body.tax_invoice_url).toBeNull();
    const [inv] = rows(s, 'SELECT * FROM tax_invoices WHERE intent_id = ?', res.body.id);
    expect(inv).toMatchObject({ status: 'pending', live_mode: 1, last_error: NO_LIVE_CERTIFIER });
    // The worker neither fabricates it nor lets it hold back the sandbox's invoices.
    await retryPendingTaxInvoices(s.daemon.ctx);
    expect(rows(s, 'SELECT status FROM tax_invoices WHERE intent_id = ?', res.body.id)[0].status).toBe('pending');
    const view = statusView(s.daemon.ctx);
    expect(view.tax_invoicing).toMatchObject({ state: 'ok', data: { live_certifier: 'none', reason: NO_LIVE_CERTIFIER } });
    expect(statusPage(view, 'csrf')).toContain('no tax_invoice_url: no tax-invoice certifier');
    const doctor = (await runDoctor(s.config)).find((c) => c.name === 'tax invoicing')!;
    expect(doctor.ok).toBe(false);
    expect(doctor.detail).toContain('no tax-invoice certifier is configured for live sales');
  });

  it('answers 400 with errors for bad input and writes nothing', async () => {
    const tables = ['cash_intents', 'intents', 'checkouts', 'events', 'sync_outbox'];
    const before = tables.map((t) => count(s, t));
    const bodies = [
      {},
      { amount_in_cents: -100 },
      { amount_in_cents: 0 },
      { amount_in_cents: 10.5 },
      { amount_in_cents: 'ten' },
      { amount_in_cents: 100_000_001 },
      { amount_in_cents: 1000, currency: 'EUR' },
      { amount_in_cents: 1000, currency: 'gtq' },
      { amount_in_cents: 1000, customer_id: 'cus_doesnotexist00' },
      { amount_in_cents: 1000, tax_id: 12345 },
    ];
    for (const body of bodies) {
      const res = await s.api('POST', '/cash_sales', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.errors, JSON.stringify(body)).toBeTypeOf('object');
    }
    const notJson = await s.api('POST', '/cash_sales', { rawBody: '{amount', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
    expect(tables.map((t) => count(s, t))).toEqual(before);
  });

  it('organization keys cannot sell', async () => {
    const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
    const org = accounts.createKey({ organizationId: s.installation.organization_id, environment: 'test' }).key;
    const res = await s.api('POST', '/cash_sales', { key: org, body: { amount_in_cents: 1000 } });
    expect(res.status).toBe(403);
  });
});

describe('cash sales while the tax-invoice provider is unreachable', () => {
  let s: TestServer;
  let port: number;
  let provider: Awaited<ReturnType<typeof startProvider>> | undefined;
  beforeAll(async () => {
    port = await freePort();
    s = await startTestServer({
      config: {
        money: { tax_invoicing: { provider: 'http', url: `http://127.0.0.1:${port}/dte`, timeout_ms: 2000, retry_interval_ms: 3_600_000 } },
        webhooks: { allow_cidrs: ['127.0.0.1/32'] },
      },
    });
  });
  afterEach(async () => {
    await provider?.close();
    provider = undefined;
  });
  afterAll(() => s.stop());

  it('sells anyway, then the retry issues the invoice and fills tax_invoice_url', async () => {
    const res = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 5000, tax_id: 'CF' } });
    expect(res.status).toBe(201);
    expect(res.body.tax_invoice_url).toBeNull();
    const [pending] = rows(s, 'SELECT * FROM tax_invoices WHERE intent_id = ?', res.body.id);
    expect(pending.status).toBe('pending');
    expect(pending.last_error).toBeTruthy();

    provider = await startProvider(port);
    expect(await retryPendingTaxInvoices(s.daemon.ctx)).toBe(1);
    const url = `https://dte.test/${pending.id}`;
    expect((await s.api('GET', `/intents/${res.body.id}`)).body.tax_invoice_url).toBe(url);
    expect(provider.received[0].headers['idempotency-key']).toBe(pending.id);
    expect(provider.received[0].body).toMatchObject({ intent_id: res.body.id, buyer_tax_id: 'CF', total_in_cents: 5000 });
    expect(await retryPendingTaxInvoices(s.daemon.ctx)).toBe(0);
  });

  it('records one sale when the same Idempotency-Key arrives while the first is in flight', async () => {
    provider = await startProvider(port, { hold: true });
    const before = count(s, 'cash_intents');
    const headers = { 'idempotency-key': 'sale-42' };
    const body = { amount_in_cents: 3000, tax_id: '99' };
    const received = once(provider.server, 'received');
    const first = s.api('POST', '/cash_sales', { body, headers });
    await received; // the first request is now waiting on the provider
    const second = await s.api('POST', '/cash_sales', { body, headers });
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('idempotency_key_in_use');
    provider.release();
    const done = await first;
    expect(done.status).toBe(201);
    const replay = await s.api('POST', '/cash_sales', { body, headers });
    expect(replay.status).toBe(201);
    expect(replay.body.id).toBe(done.body.id);
    expect(count(s, 'cash_intents')).toBe(before + 1);
  });
});

describe('the tax-invoice worker', () => {
  it('issues a pending invoice on its own once the provider is back', async () => {
    const port = await freePort();
    const s = await startTestServer({
      config: {
        money: { tax_invoicing: { provider: 'http', url: `http://127.0.0.1:${port}/dte`, timeout_ms: 1000, retry_interval_ms: 20 } },
        webhooks: { allow_cidrs: ['127.0.0.1/32'] },
      },
    });
    try {
      const res = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 800, tax_id: '77' } });
      expect(res.body.tax_invoice_url).toBeNull();
      const provider = await startProvider(port);
      try {
        const received = provider.received.length ? Promise.resolve() : once(provider.server, 'received');
        await received;
        await vi.waitFor(async () => {
          expect((await s.api('GET', `/intents/${res.body.id}`)).body.tax_invoice_url).toMatch(/^https:\/\/dte\.test\/dte_/);
        });
      } finally {
        await provider.close();
      }
    } finally {
      await s.stop();
    }
  });
});
