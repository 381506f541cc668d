import { createServer, type Server } from 'node:http';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { request } from 'undici';
import { Webhook as SvixWebhook } from 'svix';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { deliveryWorkerOf } from '../../src/modules/webhooks/index.js';

/**
 * The buyer's checkout page (issue 14 part 1) in a real browser: a shop sends the buyer to
 * `checkout_url`, the buyer presses one of the sandbox page's buttons, lands on the shop's
 * success_url or cancel_url, and the checkout, its payment and the webhook events say the same.
 */

const CHROMIUM = '/usr/bin/chromium';

let browser: Browser;
let s: TestServer;
let shop: Server;
let shopUrl: string;
let hooks: Receiver;
let signingSecret: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  // The shop: another origin than the box (another port), as a real shop is.
  shop = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>shop</title><h1 id="shop">${req.url}</h1>`);
  }).listen(0, '127.0.0.1');
  await once(shop, 'listening');
  shopUrl = `http://127.0.0.1:${(shop.address() as { port: number }).port}`;
  hooks = new Receiver();
  await hooks.start();
  // A fixed port, so the URLs the box answers (checkout_url) are the ones it listens on.
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as { port: number }).port;
  await new Promise((r) => probe.close(r));
  s = await startTestServer({
    config: { http: { host: '127.0.0.1', port }, webhooks: { allow_cidrs: ['127.0.0.1/32'] }, terminals: { ping_interval_ms: 0 } },
  });
  const ep = await s.api('POST', '/webhook_endpoints', { body: { url: hooks.url } });
  expect(ep.status).toBe(201);
  signingSecret = ep.body.signingSecret;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

afterAll(async () => {
  await browser?.close();
  await s?.stop();
  await hooks?.stop();
  shop?.close();
});

async function newCheckout(order: string, key?: string) {
  const res = await s.api('POST', '/checkouts', {
    key,
    body: {
      checkout: {
        items: [{ name: `Pedido ${order}`, amount_in_cents: 2500, currency: 'GTQ', quantity: 2 }],
        success_url: `${shopUrl}/order-received/${order}`,
        cancel_url: `${shopUrl}/cart/${order}`,
        metadata: { order_id: order },
      },
    },
  });
  expect(res.status).toBe(201);
  expect(res.body.checkout_url).toBe(`${s.url}/checkout-session/${res.body.id}`);
  return res.body as { id: string; checkout_url: string; url: string };
}

/** The verified events delivered so far about one checkout, in order. */
async function eventsOf(checkoutId: string): Promise<Array<Record<string, any>>> {
  await deliveryWorkerOf(s.daemon.ctx)!.runDue();
  const wh = new SvixWebhook(signingSecret);
  return hooks.received.map((r) => wh.verify(r.body, r.headers as Record<string, string>) as Record<string, any>).filter((e) => e.checkout?.id === checkoutId);
}

async function openPage(url: string): Promise<{ page: Page; failures: string[]; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
  const page = await context.newPage();
  const failures: string[] = [];
  page.on('requestfailed', (r) => failures.push(r.url()));
  await page.goto(url);
  return { page, failures, close: () => context.close() };
}

async function press(page: Page, button: string, lands: string | RegExp) {
  await Promise.all([page.waitForURL(lands), page.click(`button#${button}`)]);
}

const checkoutOf = async (id: string, key?: string) => (await s.api('GET', `/checkouts/${id}`, { key })).body;

describe('sandbox checkout page in a real browser', () => {
  it('pay approved: lands on success_url, the checkout is paid by card and intent.succeeded is delivered', async () => {
    const ch = await newCheckout('1001');
    const { page, failures, close } = await openPage(ch.checkout_url);
    expect(await page.textContent('#sandbox')).toContain('Sandbox');
    expect(await page.textContent('#total')).toBe('GTQ 50.00');
    expect(await page.getAttribute('#state', 'data-status')).toBe('unpaid');
    // The stylesheet loaded from the box itself and the page fits a phone.
    expect(await page.evaluate(() => getComputedStyle(document.querySelector('section')!).borderRadius)).toBe('10px');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    // The form token's cookie is out of scripts' reach and never sent from another site.
    const [formCookie] = await page.context().cookies();
    expect(formCookie).toMatchObject({ name: 'posd_checkout', httpOnly: true, sameSite: 'Strict', path: `/checkout-session/${ch.id}` });

    await press(page, 'pay', `${shopUrl}/order-received/1001`);
    expect(await page.textContent('#shop')).toBe('/order-received/1001');

    const paid = await checkoutOf(ch.id);
    expect(paid).toMatchObject({ status: 'paid', metadata: { order_id: '1001' } });
    const pa = (await s.api('GET', `/payment_intents/${paid.payment_intent_id}`)).body;
    expect(pa).toMatchObject({ status: 'succeeded', method: 'card', amount_in_cents: 5000, card: { last4: '4242' }, channel: 'sandbox' });
    await expect.poll(async () => (await eventsOf(ch.id)).map((e) => e.event_type)).toEqual(['intent.succeeded']);
    const [ev] = await eventsOf(ch.id);
    expect(ev).toMatchObject({
      id: paid.latest_intent.id,
      type: 'payment',
      status: 'succeeded',
      amount_in_cents: 5000,
      checkout: { id: ch.id, status: 'paid' },
    });

    // Back on the page later: paid, no buttons, a link back to the shop.
    await page.goto(ch.checkout_url);
    expect(await page.getAttribute('#state', 'data-status')).toBe('paid');
    expect(await page.locator('button').count()).toBe(0);
    expect(await page.getAttribute('#back', 'href')).toBe(`${shopUrl}/order-received/1001`);
    expect(failures).toEqual([]);
    await close();
  });

  it('pay declined: lands on cancel_url, the checkout failed and intent.failed is delivered', async () => {
    const ch = await newCheckout('1002');
    const { page, close } = await openPage(ch.checkout_url);
    await press(page, 'decline', `${shopUrl}/cart/1002`);
    const failed = await checkoutOf(ch.id);
    expect(failed.status).toBe('failed');
    expect((await s.api('GET', `/payment_intents/${failed.payment_intent_id}`)).body).toMatchObject({ status: 'failed', failure_reason: 'card_declined' });
    await expect.poll(async () => (await eventsOf(ch.id)).map((e) => e.event_type)).toEqual(['intent.failed']);
    await page.goto(ch.checkout_url);
    expect(await page.textContent('#state')).toContain('card_declined');
    await close();
  });

  it('card asking for payer authentication: the challenge, then passing it lands on success_url; failing it on cancel_url', async () => {
    const ch = await newCheckout('1003');
    const { page, close } = await openPage(ch.checkout_url);
    await press(page, 'payer_authentication', ch.checkout_url);
    expect(await page.getAttribute('#state', 'data-status')).toBe('needs_payer_authentication');
    expect((await checkoutOf(ch.id)).status).toBe('needs_payer_authentication');
    expect(await eventsOf(ch.id)).toEqual([]);
    await press(page, 'authenticate', `${shopUrl}/order-received/1003`);
    expect((await checkoutOf(ch.id)).status).toBe('paid');
    await expect.poll(async () => (await eventsOf(ch.id)).map((e) => e.event_type)).toEqual(['intent.succeeded']);

    const other = await newCheckout('1004');
    await page.goto(other.checkout_url);
    await press(page, 'payer_authentication', other.checkout_url);
    await press(page, 'fail_authentication', `${shopUrl}/cart/1004`);
    const failed = await checkoutOf(other.id);
    expect(failed.status).toBe('failed');
    expect((await s.api('GET', `/payment_intents/${failed.payment_intent_id}`)).body.failure_reason).toBe('payer_authentication_failed');
    await expect.poll(async () => (await eventsOf(other.id)).map((e) => e.event_type)).toEqual(['intent.failed']);

    // Closing the challenge leaves the checkout unpaid, to be paid another way.
    const third = await newCheckout('1005');
    await page.goto(third.checkout_url);
    await press(page, 'payer_authentication', third.checkout_url);
    await press(page, 'cancel', `${shopUrl}/cart/1005`);
    expect((await checkoutOf(third.id)).status).toBe('unpaid');
    await close();
  });

  it('bank transfer: lands on success_url while the money is on its way; the transfer arriving later pays the checkout', async () => {
    const ch = await newCheckout('1006');
    const { page, close } = await openPage(ch.checkout_url);
    await press(page, 'bank_transfer', `${shopUrl}/order-received/1006`);
    expect((await checkoutOf(ch.id)).status).toBe('payment_in_progress');
    // The shop hears that the money is on its way (issue 15).
    await expect.poll(async () => (await eventsOf(ch.id)).map((e) => [e.event_type, e.type])).toEqual([['intent.pending', 'bank_transfer']]);

    // Later: the sandbox page, opened again, lets the tester make the transfer arrive.
    await page.goto(ch.checkout_url);
    expect(await page.textContent('#state')).toContain('Waiting for the bank transfer');
    await press(page, 'transfer_arrives', `${shopUrl}/order-received/1006`);
    const paid = await checkoutOf(ch.id);
    expect(paid.status).toBe('paid');
    expect((await s.api('GET', `/payment_intents/${paid.payment_intent_id}`)).body).toMatchObject({ method: 'bank_transfer', status: 'succeeded' });
    await expect
      .poll(async () => (await eventsOf(ch.id)).map((e) => [e.event_type, e.type]))
      .toEqual([
        ['intent.pending', 'bank_transfer'],
        ['intent.succeeded', 'bank_transfer'],
      ]);

    // The same wait started by the test helper, settled by the other one: one code for page and API.
    const viaApi = await newCheckout('1007');
    const held = await s.api('POST', `/test_helpers/checkouts/${viaApi.id}/pending`, { body: { method: 'bank_transfer' } });
    expect(held.body).toMatchObject({ id: viaApi.id, status: 'payment_in_progress' });
    const settled = await s.api('POST', `/test_helpers/checkouts/${viaApi.id}/pay`, { body: { method: 'bank_transfer', outcome: 'failed' } });
    expect(settled.body.status).toBe('failed');
    await page.goto(viaApi.checkout_url);
    expect(await page.textContent('#state')).toContain('funds_not_received');
    await close();
  });

  it('cancel: lands on cancel_url and the checkout stays unpaid with no event', async () => {
    const ch = await newCheckout('1008');
    const { page, close } = await openPage(ch.url); // the older `url` leads to the same page
    expect(page.url()).toBe(ch.checkout_url);
    await press(page, 'cancel', `${shopUrl}/cart/1008`);
    expect((await checkoutOf(ch.id)).status).toBe('unpaid');
    expect(await eventsOf(ch.id)).toEqual([]);
    await close();
  });

  it('without success_url the buyer stays on the page, which shows the outcome', async () => {
    const res = await s.api('POST', '/checkouts', { body: { items: [{ name: 'Sin redirección', amount_in_cents: 1500, currency: 'GTQ' }] } });
    const { page, close } = await openPage(res.body.checkout_url);
    await press(page, 'pay', res.body.checkout_url);
    expect(await page.getAttribute('#state', 'data-status')).toBe('paid');
    await close();
  });
});

describe('checkout page safety', () => {
  it('refuses a form posted without the page cookie (another site) and changes nothing', async () => {
    const ch = await newCheckout('1009');
    const page = await request(ch.checkout_url);
    const html = await page.body.text();
    const token = /name="_csrf" value="([^"]+)"/.exec(html)![1];
    // The token alone, as a forged cross-site form would send it (SameSite=Strict keeps the cookie home).
    const forged = await request(`${ch.checkout_url}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: token }).toString(),
    });
    expect(forged.statusCode).toBe(403);
    await forged.body.text();
    expect((await checkoutOf(ch.id)).status).toBe('unpaid');
  });

  it('a live checkout shows what is owed and its state, and takes neither card data nor test payments', async () => {
    const ch = await newCheckout('2001', s.installation.keys.live);
    const { page, close } = await openPage(ch.checkout_url);
    expect(await page.textContent('#total')).toBe('GTQ 50.00');
    expect(await page.getAttribute('#state', 'data-status')).toBe('unpaid');
    expect(await page.textContent('#live-note')).toContain('terminal');
    expect(await page.locator('#sandbox').count()).toBe(0);
    expect(await page.locator('form, input, button').count()).toBe(0);
    const posted = await request(`${ch.checkout_url}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '_csrf=x',
    });
    expect(posted.statusCode).toBe(404);
    await posted.body.text();
    expect((await checkoutOf(ch.id, s.installation.keys.live)).status).toBe('unpaid');
    await close();
  });

  it('offers only the methods every line allows (items[].payment_method_types) and refuses the others', async () => {
    const res = await s.api('POST', '/checkouts', {
      body: {
        items: [
          { name: 'Solo transferencia', amount_in_cents: 2500, payment_method_types: ['bank_transfer'] },
          { name: 'Libre', amount_in_cents: 2500 },
        ],
      },
    });
    const { page, close } = await openPage(res.body.checkout_url);
    expect(await page.locator('button#bank_transfer').count()).toBe(1);
    expect(await page.locator('button#pay, button#decline, button#payer_authentication').count()).toBe(0);
    // A card form from elsewhere (same browser, so the cookie is there) changes nothing.
    const token = await page.getAttribute('input[name=_csrf]', 'value');
    const cookieHeader = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const forced = await request(`${res.body.checkout_url}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader },
      body: new URLSearchParams({ _csrf: token! }).toString(),
    });
    expect(forced.statusCode).toBe(303);
    await forced.body.text();
    expect((await checkoutOf(res.body.id)).status).toBe('unpaid');
    await close();
  });

  it('an unknown checkout is a 404 page, and the page is never framed or cached', async () => {
    const res = await request(`${s.url}/checkout-session/ch_doesnotexist0000`);
    expect(res.statusCode).toBe(404);
    expect(await res.body.text()).toContain('Checkout not found');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
  });

  it('the test helper for a waiting payment is a sandbox-only route', async () => {
    const ch = await newCheckout('2002', s.installation.keys.live);
    const res = await s.api('POST', `/test_helpers/checkouts/${ch.id}/pending`, { key: s.installation.keys.live, body: { method: 'card' } });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('route_not_found');
  });
});
