import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';
import { PageClient } from '../helpers/page-client.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';

// The status page's "replay failures since …" (issue 21) with the real webhooks area, in headless
// Chromium: the button makes the same bulk replay as POST /webhook_endpoints/{id}/replays.
const CHROMIUM = '/usr/bin/chromium';
const PASSWORD = 'replay-manager-2026';

let browser: Browser;
let server: TestServer;
let receiver: Receiver;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  receiver = new Receiver([{ status: 503 }]);
  await receiver.start();
  // Two automatic attempts (now, then at once again), then a delivery is given up: `failed`.
  server = await startTestServer({
    config: { webhooks: { allow_cidrs: ['127.0.0.1/32'], retry_delays_ms: [0], breaker_failures: 0 }, terminals: { ping_interval_ms: 0 } },
  });
  const hash = await hashPassword(PASSWORD);
  tx(server.daemon.ctx.db, () => setManagerPassword(server.daemon.ctx.db, hash));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await receiver?.stop();
});

function emit(n: number): string[] {
  return tx(server.daemon.ctx.db, () =>
    Array.from(
      { length: n },
      (_, i) =>
        server.daemon.ctx.outbox.emit({
          type: 'intent.succeeded',
          accountId: server.installation.sandbox_id,
          liveMode: false,
          payload: { id: `in_r${i}`, amount_in_cents: 100 + i },
        }).id,
    ),
  );
}

const statuses = async (endpointId: string) =>
  ((await server.api('GET', `/webhook_endpoints/${endpointId}/deliveries`)).body as Array<{ status: string }>).map((d) => d.status).sort();

describe('the status page replays a failing endpoint', () => {
  it('offers one "resend the failed" button on the endpoint\'s line and replays through the bulk replay service', { timeout: 60_000 }, async () => {
    const ep = (await server.api('POST', '/webhook_endpoints', { body: { url: receiver.url, description: 'ERP' } })).body as {
      id: string;
      signingSecret: string;
    };
    const events = emit(3);
    // The receiver is down: each event is attempted twice, then given up.
    await receiver.waitFor(6);
    await expect.poll(() => statuses(ep.id), { timeout: 20_000 }).toEqual(['failed', 'failed', 'failed']);
    const afterFailures = new Date().toISOString();
    receiver.replies = [{ status: 200 }];

    const context = await browser.newContext({ viewport: { width: 390, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${server.url}/`);
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(`${server.url}/`), page.click('button[type=submit]')]);
    const panel = 'section#webhooks';
    expect(await page.textContent(panel)).toContain(receiver.url);
    const since = page.locator(`${panel} form.replay input[name=since]`);
    // Hidden: one button per endpoint, starting early enough to cover every failed delivery.
    expect(await since.getAttribute('type')).toBe('hidden');
    const defaultSince = await since.inputValue();
    expect(Number.isNaN(Date.parse(defaultSince))).toBe(false);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(await page.locator(`${panel} button`).count()).toBe(1);

    // A stale or hand-made form: a time after the failures replays nothing; an unreadable one is refused.
    const client = new PageClient(server.url);
    await client.login(PASSWORD);
    const csrf = PageClient.csrf((await client.get('/')).text);
    const late = await client.post(`/ops/endpoints/${ep.id}/replay`, { _csrf: csrf, since: afterFailures });
    expect(decodeURIComponent(String(late.headers.location))).toContain('No failed delivery to');
    expect(receiver.received).toHaveLength(6);
    const unreadable = await client.post(`/ops/endpoints/${ep.id}/replay`, { _csrf: csrf, since: 'yesterday-ish' });
    expect(decodeURIComponent(String(unreadable.headers.location))).toContain('is not a time');

    // The button: all three.
    await Promise.all([page.waitForURL(/\/\?notice=/), page.click(`${panel} button:text("Resend the 3 failed")`)]);
    const notice = (await page.textContent('[role=status]'))!;
    expect(notice).toContain(`Replaying 3 failed deliveries to ${receiver.url}`);
    const replayId = /replay (whr_[A-Za-z0-9]+)/.exec(notice)![1];

    // The same replay the API makes: the same event, the same webhook-id, verified.
    await receiver.waitFor(9);
    const replayed = receiver.received.slice(6);
    expect(replayed.map((q) => q.headers['webhook-id']).sort()).toEqual([...events].sort());
    const wh = new Webhook(ep.signingSecret);
    for (const q of replayed) wh.verify(q.body, q.headers as Record<string, string>);
    await expect
      .poll(async () => (await server.api('GET', `/webhook_endpoints/${ep.id}/replays/${replayId}`)).body)
      .toMatchObject({ id: replayId, endpoint_id: ep.id, total: 3, succeeded: 3, filters: { statuses: ['failed'] } });
    await context.close();
  });

  it("refuses a replay without the page's CSRF token, and shows no button for a disabled endpoint", async () => {
    const ep = (await server.api('POST', '/webhook_endpoints', { body: { url: receiver.url } })).body as { id: string };
    const client = new PageClient(server.url);
    await client.login(PASSWORD);
    const before = receiver.received.length;
    const refused = await client.post(`/ops/endpoints/${ep.id}/replay`, { _csrf: 'not-the-token', since: '2020-01-01T00:00:00Z' });
    expect(refused.status).toBe(403);
    const none = await server.api('GET', `/webhook_endpoints/${ep.id}/deliveries`);
    expect(none.body).toEqual([]);
    expect(receiver.received.length).toBe(before);

    await server.api('PATCH', `/webhook_endpoints/${ep.id}`, { body: { disabled: true } });
    const page = await client.get('/');
    expect(page.text).not.toContain(`/ops/endpoints/${ep.id}/replay`);
    // Asked anyway (a stale page): the service's refusal comes back as a notice.
    const stale = await client.post(`/ops/endpoints/${ep.id}/replay`, { _csrf: PageClient.csrf(page.text), since: '2020-01-01T00:00:00Z' });
    expect(stale.status).toBe(303);
    expect(decodeURIComponent(String(stale.headers.location))).toContain('Replay failed: The webhook endpoint is disabled');
    const future = await client.post(`/ops/endpoints/${ep.id}/replay`, { _csrf: PageClient.csrf(page.text), since: '2999-01-01T00:00:00Z' });
    expect(decodeURIComponent(String(future.headers.location))).toContain('is in the future');
  });
});
