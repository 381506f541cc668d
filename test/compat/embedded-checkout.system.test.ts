import { createServer, type Server } from 'node:http';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Frame, type Page } from 'playwright-core';
import { request } from 'undici';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { accountsOf } from '../../src/accounts/service.js';
import { groupCommit } from '../../src/db/group-commit.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';

/**
 * The embedded checkout (issue 34, hosted-api.md section 16b) in a real browser: a shop page on
 * another site (http://localhost:<port>, while the box is http://127.0.0.1:<port>) frames
 * `checkout_url?embed=true` as the hosted library does (an iframe in #recurrente-checkout-container,
 * a `message` listener handing `{type, message}` to onSuccess / onFailure / onPaymentInProgress) and
 * hears each outcome. The shop's code is written to the protocol, as the library's development mode
 * reads it (no origin check), and records the origin each message came from so the test checks it.
 */

const CHROMIUM = '/usr/bin/chromium';

/** A shop written to the embedded-checkout protocol; `?checkout=` names the checkout URL to frame. */
const SHOP_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>shop</title></head><body>
<h1 id="shop">Shop</h1><div id="recurrente-checkout-container"></div>
<script>
  window.calls = [];
  var url = new URL(location.href).searchParams.get('checkout');
  var src = url + (url.indexOf('?') >= 0 ? '&' : '?') + 'embed=true';
  var callbacks = {
    'recurrente-plugin:payment-success': 'onSuccess',
    'recurrente-plugin:payment-failed': 'onFailure',
    'recurrente-plugin:payment-in-progress': 'onPaymentInProgress',
  };
  window.addEventListener('message', function (event) {
    var name = event.data && callbacks[event.data.event];
    if (name) window.calls.push({ callback: name, origin: event.origin, arg: { type: event.data.type, message: event.data.message }, keys: Object.keys(event.data).sort() });
  });
  var frame = document.createElement('iframe');
  frame.id = 'recurrente-checkout-iframe';
  frame.allow = 'payment';
  frame.style.cssText = 'width: 100%; height: 850px; border: none;';
  frame.src = src;
  document.getElementById('recurrente-checkout-container').appendChild(frame);
</script></body></html>`;

let browser: Browser;
let s: TestServer;
const shops: Server[] = [];
let shopUrl: string;
let otherShopUrl: string;

async function startShop(): Promise<string> {
  const shop = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(SHOP_PAGE));
  shop.listen(0, 'localhost');
  await once(shop, 'listening');
  shops.push(shop);
  return `http://localhost:${(shop.address() as { port: number }).port}`;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  shopUrl = await startShop();
  otherShopUrl = await startShop();
  // A fixed port, so checkout_url is the address the box listens on.
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as { port: number }).port;
  await new Promise((r) => probe.close(r));
  s = await startTestServer({ config: { http: { host: '127.0.0.1', port }, terminals: { ping_interval_ms: 0 } } });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

afterAll(async () => {
  await browser?.close();
  await s?.stop();
  for (const shop of shops) shop.close();
});

async function newCheckout(key?: string) {
  const res = await s.api('POST', '/checkouts', {
    key,
    body: { items: [{ name: 'Kit', amount_in_cents: 2500, currency: 'GTQ' }], success_url: `${shopUrl}/thanks`, cancel_url: `${shopUrl}/cart` },
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; checkout_url: string };
}

type Call = { callback: string; origin: string; arg: { type: string; message: string }; keys: string[] };

async function openShop(
  shop: string,
  checkoutUrl: string,
): Promise<{ page: Page; frame: () => Promise<Frame>; calls: () => Promise<Call[]>; close: () => Promise<void> }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${shop}/?checkout=${encodeURIComponent(checkoutUrl)}`);
  const frame = async () => {
    const handle = await page.waitForSelector('#recurrente-checkout-iframe');
    return (await handle.contentFrame())!;
  };
  return { page, frame, calls: () => page.evaluate(() => (window as unknown as { calls: Call[] }).calls), close: () => context.close() };
}

async function waitForCalls(page: Page, n: number): Promise<Call[]> {
  await page.waitForFunction((count) => (window as unknown as { calls: unknown[] }).calls.length >= count, n);
  return page.evaluate(() => (window as unknown as { calls: Call[] }).calls);
}

/** Whether the frame shows the checkout page (a refused frame shows the browser's error page). */
async function showsCheckout(frame: Frame): Promise<boolean> {
  await frame.waitForLoadState();
  return (await frame.$('#state')) !== null;
}

describe('the embedded checkout in a real browser (sandbox: any origin frames it)', () => {
  it('pay approved: the shop hears payment-success from the box, with exactly {event, type, message}', async () => {
    const ch = await newCheckout();
    const { page, frame, close } = await openShop(shopUrl, ch.checkout_url);
    const f = await frame();
    expect(await showsCheckout(f)).toBe(true);
    expect(await f.getAttribute('#state', 'data-status')).toBe('unpaid');
    // No way back to the shop inside the frame: the shop's callbacks move the buyer on.
    await Promise.all([f.waitForURL(`${ch.checkout_url}?embed=true`), f.click('button#pay')]);
    const [call] = await waitForCalls(page, 1);
    expect(call).toEqual({
      callback: 'onSuccess',
      origin: s.url,
      arg: { type: 'success', message: 'Payment succeeded.' },
      keys: ['event', 'message', 'type'],
    });
    expect(await f.getAttribute('#state', 'data-status')).toBe('paid');
    expect(await f.$('#back')).toBeNull();
    // The shop's page stayed where it was: the frame did not go to success_url.
    expect(page.url()).toContain(shopUrl);
    expect((await s.api('GET', `/checkouts/${ch.id}`)).body.status).toBe('paid');
    await close();
  });

  it('pay declined: payment-failed with type notice and the reason', async () => {
    const ch = await newCheckout();
    const { page, frame, close } = await openShop(shopUrl, ch.checkout_url);
    const f = await frame();
    await f.click('button#decline');
    const [call] = await waitForCalls(page, 1);
    expect(call).toMatchObject({ callback: 'onFailure', origin: s.url, arg: { type: 'notice' } });
    expect(call!.arg.message).toContain('card_declined');
    expect((await s.api('GET', `/checkouts/${ch.id}`)).body.status).toBe('failed');
    await close();
  });

  it('bank transfer: payment-in-progress while the money is on its way, then payment-success when it arrives', async () => {
    const ch = await newCheckout();
    const { page, frame, close } = await openShop(shopUrl, ch.checkout_url);
    const f = await frame();
    await f.click('button#bank_transfer');
    const [first] = await waitForCalls(page, 1);
    expect(first).toMatchObject({ callback: 'onPaymentInProgress', origin: s.url, arg: { type: 'notice' } });
    expect((await s.api('GET', `/checkouts/${ch.id}`)).body.status).toBe('payment_in_progress');
    await f.click('button#transfer_arrives');
    const calls = await waitForCalls(page, 2);
    expect(calls.map((c) => c.callback)).toEqual(['onPaymentInProgress', 'onSuccess']);
    await close();
  });

  it('without embed=true the page is never framed (X-Frame-Options DENY), as before', async () => {
    const ch = await newCheckout();
    const plain = await request(ch.checkout_url);
    await plain.body.text();
    expect(plain.headers['x-frame-options']).toBe('DENY');
    expect(String(plain.headers['content-security-policy'])).toContain("frame-ancestors 'none'");
    const embedded = await request(`${ch.checkout_url}?embed=true`);
    await embedded.body.text();
    expect(embedded.headers['x-frame-options']).toBeUndefined();
    expect(String(embedded.headers['content-security-policy'])).toContain('frame-ancestors *');
    expect(String(embedded.headers['content-security-policy'])).toContain("script-src 'self'");

    // A shop that frames the plain URL gets nothing: the browser refuses the frame.
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.setContent(`<iframe id="f" src="${ch.checkout_url}"></iframe>`);
    const f = (await (await page.waitForSelector('#f')).contentFrame())!;
    expect(await showsCheckout(f)).toBe(false);
    await context.close();
  });
});

describe('the embedded checkout of a live account: only the origins it allows', () => {
  it('an allowed shop frames a live checkout and hears its outcome posted to its own origin; another shop is refused', async () => {
    const liveKey = s.installation.keys.live;
    const accounts = accountsOf(s.daemon.ctx);
    const live = accounts.account(s.installation.account_id)!;
    const ch = await newCheckout(liveKey);

    // Before the account names any shop: not framed, even with embed=true.
    const before = await request(`${ch.checkout_url}?embed=true`);
    await before.body.text();
    expect(before.headers['x-frame-options']).toBe('DENY');

    accounts.updateSettings(live.id, { embed_origins: [shopUrl] });
    // Paid at the counter's terminal (live card payments are taken there).
    await groupCommit(s.daemon.ctx.db, () =>
      settleCheckoutPayment(s.daemon.ctx, accounts.account(live.id)!, {
        checkoutId: ch.id,
        method: 'terminal',
        outcome: 'succeeded',
        card: { network: 'visa', last4: '1111' },
        authorizationCode: 'A1',
      }),
    );
    const headers = await request(`${ch.checkout_url}?embed=true`);
    await headers.body.text();
    expect(String(headers.headers['content-security-policy'])).toContain(`frame-ancestors ${shopUrl};`);

    const allowed = await openShop(shopUrl, ch.checkout_url);
    expect(await showsCheckout(await allowed.frame())).toBe(true);
    const [call] = await waitForCalls(allowed.page, 1);
    expect(call).toMatchObject({ callback: 'onSuccess', origin: s.url, arg: { type: 'success' } });
    // The page names only the allowed shop as its messages' target: never `*` for a live account.
    expect(await (await allowed.frame()).getAttribute('#embed-message', 'data-targets')).toBe(shopUrl);
    await allowed.close();

    const other = await openShop(otherShopUrl, ch.checkout_url);
    expect(await showsCheckout(await other.frame())).toBe(false);
    expect(await other.calls()).toEqual([]);
    await other.close();
  });
});
