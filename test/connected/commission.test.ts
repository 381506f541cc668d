import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { tx } from '../../src/db/database.js';
import { postBalanceTransaction } from '../../src/modules/ledger/service.js';
import { commissionInvoicer } from '../../src/modules/connected/index.js';

// Monday 2026-06-01 09:00 in Guatemala (UTC-6).
const clock = new ManualClock(Date.parse('2026-06-01T15:00:00.000Z'));
const HOUR = 3600_000;
let s: TestServer;
let certifier: Server;
let certifierUp = true;
const certified: any[] = [];

function events(type: string): any[] {
  // `to`: the account the event is delivered to (the platform); `account_id` in the payload is the child.
  return (s.daemon.ctx.db.prepare('SELECT account_id, payload FROM events WHERE type = ? ORDER BY seq').all(type) as any[]).map((e) => ({
    ...JSON.parse(e.payload),
    to: e.account_id,
  }));
}

function charge(accountId: string, amount: number, currency = 'GTQ'): void {
  const vat = Math.round((amount * 0.045 * 12) / 112);
  const fee = Math.round(amount * 0.045);
  tx(s.daemon.ctx.db, () =>
    postBalanceTransaction(s.daemon.ctx, {
      accountId,
      liveMode: false,
      type: 'charge',
      amountInCents: amount,
      feeInCents: -fee,
      feeDetails: { commission_in_cents: fee - vat, vat_withheld_in_cents: vat },
      currency,
      sourceId: 'pa_x',
      sourceType: 'payment_intent',
    }),
  );
}

beforeAll(async () => {
  // A real HTTP certifier: it answers 503 while down, and issues otherwise.
  certifier = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (!certifierUp) {
        res.writeHead(503).end();
        return;
      }
      const r = JSON.parse(body);
      certified.push(r);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ document_id: `DTE-${r.invoice_id}`, url: `https://fel.example/${r.invoice_id}` }));
    });
  });
  await new Promise<void>((r) => certifier.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(certifier.address() as AddressInfo).port}/issue`;
  s = await startTestServer({
    clock,
    config: {
      money: { tax_invoicing: { provider: 'http', url } },
      // The certifier listens on loopback, which the outbound guard refuses unless allow-listed.
      webhooks: { allow_cidrs: ['127.0.0.1/32'] },
      connected: { invoice_max_attempts: 2, invoice_retry_base_ms: 60_000 },
    },
  });
});
afterAll(async () => {
  await s.stop();
  certifier.close();
});

describe('commission invoicing (spec 2.8) and the daily commission invoice', () => {
  let a: string;
  let b: string;

  it('404 for an unknown child; inherits the platform default until overridden', async () => {
    expect((await s.api('GET', '/connected_accounts/ac_unknown/commission_invoicing')).status).toBe(404);
    a = (await s.api('POST', '/connected_accounts', { body: { email: 'a@example.com' } })).body.id;
    b = (await s.api('POST', '/connected_accounts', { body: { email: 'b@example.com' } })).body.id;
    const r = await s.api('GET', `/connected_accounts/${a}/commission_invoicing`);
    expect(r.body).toEqual({ mode: 'none', override_mode: null, default_mode: 'none', timezone: 'America/Guatemala', enabled_at: null, disabled_at: null });
    const d = await s.api('PATCH', '/commission_invoicing_settings', { body: { default_mode: 'daily' } });
    expect(d.body).toEqual({ default_mode: 'daily', timezone: 'America/Guatemala' });
    const after = await s.api('GET', `/connected_accounts/${a}/commission_invoicing`);
    expect(after.body).toMatchObject({ mode: 'daily', override_mode: null, default_mode: 'daily', enabled_at: '2026-06-01T15:00:00.000Z', disabled_at: null });
    const off = await s.api('PATCH', `/connected_accounts/${b}/commission_invoicing`, { body: { override_mode: 'none' } });
    expect(off.body).toMatchObject({ mode: 'none', override_mode: 'none', default_mode: 'daily', disabled_at: '2026-06-01T15:00:00.000Z' });
    expect((await s.api('PATCH', `/connected_accounts/${a}/commission_invoicing`, { body: { override_mode: 'weekly' } })).status).toBe(400);
  });

  it('issues one invoice per finished day and currency, only for daily children, each event once', async () => {
    charge(a, 10000);
    charge(a, 20000);
    charge(a, 5000, 'USD');
    charge(b, 50000);
    await commissionInvoicer(s.daemon.ctx).runDue();
    expect(events('partner_commission_invoice.issued')).toHaveLength(0); // the day is not over
    clock.advance(16 * HOUR); // Tuesday 01:00 in Guatemala
    charge(a, 40000); // Tuesday: invoiced tomorrow
    await commissionInvoicer(s.daemon.ctx).runDue();
    await commissionInvoicer(s.daemon.ctx).runDue();
    const issued = events('partner_commission_invoice.issued');
    expect(issued).toHaveLength(2);
    expect(issued.every((e) => e.to === s.installation.sandbox_id && e.connected === true && e.account_id === a)).toBe(true);
    const gtq = issued.find((e) => e.invoice.currency === 'GTQ');
    expect(gtq).toMatchObject({ to: s.installation.sandbox_id, account_id: a, connected: true });
    expect(gtq.invoice).toMatchObject({
      account_id: a,
      day: '2026-06-01',
      total_in_cents: 1350,
      status: 'issued',
      url: expect.stringMatching(/^https:\/\/fel\.example\//),
    });
    expect(gtq.invoice.commission_in_cents + gtq.invoice.vat_in_cents).toBe(1350);
    expect(certified.map((c) => c.buyer_tax_id)).toEqual(['CF', 'CF']);
    const list = await s.api('GET', `/connected_accounts/${a}/commission_invoices`);
    expect(list.body.map((i: any) => [i.day, i.currency, i.status])).toEqual([
      ['2026-06-01', 'GTQ', 'issued'],
      ['2026-06-01', 'USD', 'issued'],
    ]);
    expect((await s.api('GET', `/connected_accounts/${b}/commission_invoices`)).body).toEqual([]);
  });

  it('switching to none still drains the commissions before disabled_at, and nothing after', async () => {
    clock.advance(10 * HOUR); // Tuesday 11:00
    await s.api('PATCH', `/connected_accounts/${a}/commission_invoicing`, { body: { override_mode: 'none' } });
    charge(a, 99999); // after disabled_at: never invoiced
    clock.advance(2 * 24 * HOUR);
    await commissionInvoicer(s.daemon.ctx).runDue();
    const list = (await s.api('GET', `/connected_accounts/${a}/commission_invoices`)).body;
    expect(list.map((i: any) => [i.day, i.currency, i.total_in_cents])).toEqual([
      ['2026-06-01', 'GTQ', 1350],
      ['2026-06-01', 'USD', 225],
      ['2026-06-02', 'GTQ', 1800],
    ]);
  });

  it('a certifier that stays down ends in partner_commission_invoice.failed, once', async () => {
    const c = (await s.api('POST', '/connected_accounts', { body: { email: 'c@example.com' } })).body.id;
    charge(c, 10000);
    certifierUp = false;
    clock.advance(24 * HOUR);
    await commissionInvoicer(s.daemon.ctx).runDue();
    let inv = (await s.api('GET', `/connected_accounts/${c}/commission_invoices`)).body[0];
    expect(inv).toMatchObject({ status: 'pending', attempts: 1, last_error: expect.stringContaining('503') });
    await commissionInvoicer(s.daemon.ctx).runDue(); // not due yet: no attempt
    expect((await s.api('GET', `/connected_accounts/${c}/commission_invoices`)).body[0].attempts).toBe(1);
    clock.advance(60_000);
    await commissionInvoicer(s.daemon.ctx).runDue();
    inv = (await s.api('GET', `/connected_accounts/${c}/commission_invoices`)).body[0];
    expect(inv).toMatchObject({ status: 'failed', attempts: 2 });
    clock.advance(24 * HOUR);
    certifierUp = true;
    await commissionInvoicer(s.daemon.ctx).runDue();
    const failed = events('partner_commission_invoice.failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ to: s.installation.sandbox_id, account_id: c, connected: true, invoice: { account_id: c, status: 'failed' } });
  });
});
