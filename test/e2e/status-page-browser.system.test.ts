import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, runPosd, spawnDaemon, type DaemonProcess } from '../helpers/process.js';
import { until } from '../helpers/until.js';
import { freePort } from '../helpers/free-port.js';

// Issue 16, "a status page with a verdict first", its details: times in the box's zone with their
// age, till names instead of ids, no clipped columns at 390 px, failing deliveries one line per
// endpoint with one resend button, old errors greyed once recovered, what the page counts, and a
// central's stores. A central and a store as their own processes, in a zone that is not UTC, read
// in headless Chromium at desktop and phone widths. Screenshots stay in SHOTS for a person to look at.

const CHROMIUM = '/usr/bin/chromium';
const TZ = 'America/Guatemala'; // UTC-06:00, no daylight saving time
const PASSWORD = 'status page 2026';
const WIDTHS = [1280, 390] as const;
/** Kept after the run (printed): the screenshots at each width. */
const SHOTS = process.env.POSD_STATUS_SHOTS ?? mkdtempSync(join(tmpdir(), 'posd-status-shots-'));

const dirs: string[] = [];
const daemons: DaemonProcess[] = [];
let browser: Browser;
let receiver: Server;
let answer = 503;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  mkdirSync(SHOTS, { recursive: true });
  receiver = createServer((_req, res) => res.writeHead(answer).end()).listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

afterAll(async () => {
  await browser?.close();
  receiver?.close();
  console.log(`status page screenshots: ${SHOTS}`);
});

afterEach(async () => {
  for (const d of daemons.splice(0)) {
    if (d.child.exitCode === null && d.child.signalCode === null) {
      d.child.kill('SIGKILL');
      await d.exited;
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'posd-statuspage-'));
  dirs.push(d);
  return d;
}

async function serve(args: string[], env: Record<string, string>): Promise<{ d: DaemonProcess; url: string }> {
  const d = spawnDaemon(args, { TZ, ...env });
  daemons.push(d);
  const [, url] = await d.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)\/api"/, 90_000);
  return { d, url };
}

async function setPassword(data: string): Promise<void> {
  const child = spawn(process.execPath, [MAIN, 'manager', 'set-password', '--password-stdin', '--data', data], { stdio: ['pipe', 'ignore', 'inherit'] });
  child.stdin.end(`${PASSWORD}\n`);
  const [code] = await once(child, 'exit');
  expect(code).toBe(0);
}

async function api(url: string, key: string, method: string, path: string, body?: unknown) {
  const res = await request(`${url}${path}`, {
    method: method as 'GET',
    headers: { 'x-secret-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text };
}

async function logIn(url: string, width: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 }, isMobile: width < 500 });
  const page = await context.newPage();
  await page.goto(`${url}/`);
  await page.fill('#password', PASSWORD);
  await Promise.all([page.waitForURL(`${url}/`), page.click('button[type=submit]')]);
  return page;
}

/** Nothing wider than the viewport: the page does not scroll sideways and no section clips or scrolls. */
async function fits(page: Page, width: number): Promise<void> {
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
  const clipped = await page.evaluate(() =>
    [...document.querySelectorAll('section')].filter((s) => s.scrollWidth > s.clientWidth).map((s) => `${s.id}: ${s.scrollWidth} > ${s.clientWidth}`),
  );
  expect(clipped).toEqual([]);
}

const hhmm = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZone: TZ });

/** Every `<time>` on the page reads as the box's local time with an age, its exact time in `datetime`. */
async function localTimes(page: Page): Promise<number> {
  const times = await page.$$eval('time', (ts) =>
    ts.map((t) => ({ text: t.textContent!, datetime: t.getAttribute('datetime')!, title: t.getAttribute('title') })),
  );
  expect(times.length).toBeGreaterThan(0);
  for (const t of times) {
    expect(t.title).toBe(t.datetime);
    expect(t.datetime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(t.text).not.toMatch(/\d{4}-\d\d-\d\dT/);
    // Today's times: "14:03, 5 min ago", in Guatemala's time, not UTC's.
    if (/^\d\d:\d\d,/.test(t.text)) expect(t.text.slice(0, 5)).toBe(hhmm.format(new Date(t.datetime)));
    expect(t.text).toMatch(/, (just now|\d+ (s|min|h|d) ago|in \d+ (s|min|h|d))$/);
  }
  return times.length;
}

describe('the status page in a browser, desktop and phone', () => {
  it(
    "a store and its central: local times, names, no clipping, grouped webhooks, greyed old errors, live and sandbox sales, the central's stores",
    { timeout: 600_000 },
    async () => {
      const c = dir();
      const s = dir();
      const inst = JSON.parse((await runPosd(['init', '--role', 'central', '--data', c, '--json'])).stdout) as {
        account_id: string;
        keys: { live: string; test: string };
      };
      await setPassword(c);
      const centralPort = await freePort();
      let central = await serve(['--data', c, '--port', String(centralPort)], {});
      const joined = await runPosd(['init', '--central-url', central.url, '--central-key', inst.keys.live, '--data', s]);
      expect(joined.stderr).toBe('');
      await setPassword(s);
      const storeEnv = {
        POSD_SYNC_BACKOFF_MAX_MS: '500',
        POSD_WEBHOOKS_ALLOW_CIDRS: '127.0.0.1/32',
        POSD_WEBHOOKS_RETRY_DELAYS_MS: '0',
        POSD_WEBHOOKS_BREAKER_FAILURES: '0',
      };
      const store = await serve(['--data', s, '--port', '0'], storeEnv);
      const live = inst.keys.live;

      // A till registered by name, a receiver that answers 503, two live sales and one sandbox sale.
      const till = JSON.parse((await runPosd(['terminals', 'add', '--account', inst.account_id, '--name', 'Till 2', '--data', s, '--json'])).stdout) as {
        id: string;
      };
      const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const endpoint = await api(store.url, live, 'POST', '/api/webhook_endpoints', { url: hook, description: 'ERP' });
      expect(endpoint.status).toBe(201);
      for (const amount of [1000, 2550])
        expect((await api(store.url, live, 'POST', '/api/cash_sales', { amount_in_cents: amount, currency: 'GTQ' })).status).toBe(201);
      expect((await api(store.url, inst.keys.test, 'POST', '/api/cash_sales', { amount_in_cents: 99_999, currency: 'GTQ' })).status).toBe(201);
      const deliveries = async () =>
        (await api(store.url, live, 'GET', `/api/webhook_endpoints/${endpoint.body.id}/deliveries`)).body as Array<{ status: string }>;
      await until('the store to push', async () => (await api(store.url, live, 'GET', '/sync/status')).body.records_waiting === 0, 60_000);

      // The central goes away for a while: the store's sync records its error.
      central.d.child.kill('SIGTERM');
      await central.d.exited;
      expect((await api(store.url, live, 'POST', '/api/cash_sales', { amount_in_cents: 700, currency: 'GTQ' })).status).toBe(201);
      await until('a sync error', async () => (await api(store.url, live, 'GET', '/sync/status')).body.last_error, 60_000);
      const failed: number = await until(
        'the deliveries to be given up',
        async () => {
          const list = await deliveries();
          // Three live sales, three events: wait for all three deliveries (the last sale's is fanned
          // out a moment after its answer), each given up.
          return list.length >= 3 && list.every((d) => d.status === 'failed') ? list.length : undefined;
        },
        60_000,
      );
      expect(failed).toBeGreaterThanOrEqual(3);

      for (const width of WIDTHS) {
        const page = await logIn(store.url, width);
        // The error stands while the central is away: red, with its time.
        const error = page.locator('section#sync td[data-stale]');
        expect(await error.getAttribute('data-stale')).toBe('current');
        expect(await error.getAttribute('class')).toBe('bad');
        expect(await error.locator('time').count()).toBe(1);

        // Names, not ids.
        expect(await page.textContent('section#terminals')).toContain('Till 2');
        expect(await page.textContent('section#terminals')).not.toContain(till.id);
        expect(await page.getAttribute(`section#terminals td[data-id="${till.id}"]`, 'title')).toBe(till.id);
        expect(await page.textContent('section#webhooks')).not.toContain(inst.account_id);

        // One line for the endpoint, a count, the last failure and its time; one button.
        const line = (await page.textContent('section#webhooks article.endpoint'))!;
        expect(line).toMatch(new RegExp(`${failed} failed deliveries, last: [a-z_]+\\.[a-z_]+ 503 at \\d\\d:\\d\\d, (just now|\\d+ (s|min) ago)`));
        expect(await page.locator('section#webhooks button').count()).toBe(1);
        expect(await page.textContent('section#webhooks button')).toBe(`Resend the ${failed} failed`);

        // What the page counts: live sales, and it says so.
        const sales = (await page.textContent('section#sales'))!;
        expect(sales).toContain('Live sales only.');
        expect(sales).toContain('GTQ 42.50'); // 10.00 + 25.50 + 7.00
        expect(sales).not.toContain('999.99');

        await localTimes(page);
        expect(await page.textContent('.foot')).toContain(`Times are this box's: ${TZ} (UTC-06:00).`);
        await fits(page, width);
        await page.screenshot({ path: join(SHOTS, `store-${width}.png`), fullPage: true });

        // The toggle: sandbox sales apart, and the page says so.
        await Promise.all([page.waitForURL(/sandbox=1/), page.click('section#sales a:text("Show sandbox sales")')]);
        expect(await page.textContent('section#sales .counts')).toContain('Live sales; sandbox sales below, apart.');
        expect(await page.textContent('#sandbox-sales')).toContain('GTQ 999.99');
        await fits(page, width);
        await page.screenshot({ path: join(SHOTS, `store-sandbox-${width}.png`), fullPage: true });
        await page.context().close();
      }

      // The central is back on its address: the store pushes again, its old error is greyed, not red.
      central = await serve(['--data', c, '--port', String(centralPort)], {});
      await until(
        'the store to reconnect',
        async () => {
          const st = (await api(store.url, live, 'GET', '/sync/status')).body;
          return st.connected && st.records_waiting === 0;
        },
        60_000,
      );
      // The receiver answers again: a new delivery succeeds, the old failures are shown greyed.
      answer = 204;
      expect((await api(store.url, live, 'POST', '/api/cash_sales', { amount_in_cents: 100, currency: 'GTQ' })).status).toBe(201);
      await until('a delivery to go through', async () => (await deliveries()).some((d) => d.status === 'succeeded'), 60_000);
      for (const width of WIDTHS) {
        const page = await logIn(store.url, width);
        const error = page.locator('section#sync td[data-stale]');
        expect(await error.getAttribute('data-stale')).toBe('recovered');
        expect(await error.getAttribute('class')).toBe('stale');
        expect(await error.textContent()).toContain('recovered since');
        expect(await page.evaluate(() => getComputedStyle(document.querySelector('section#sync td.stale')!).color)).toBe('rgb(138, 144, 150)');
        expect(await page.getAttribute('section#webhooks article.endpoint', 'data-state')).toBe('recovered');
        expect(await page.textContent('section#webhooks article.endpoint')).toContain('the endpoint answers again');
        await fits(page, width);
        await page.screenshot({ path: join(SHOTS, `store-recovered-${width}.png`), fullPage: true });
        if (width === 390) {
          // The endpoint's one button resends its failures; then nothing is left failing.
          await Promise.all([page.waitForURL(/notice=/), page.click('section#webhooks button')]);
          expect(await page.textContent('[role=status]')).toContain(`Replaying ${failed} failed deliveries to ${hook}`);
          await until(
            'the replay to go through',
            async () => {
              await page.goto(`${store.url}/`);
              return (await page.textContent('section#webhooks'))!.includes('Every delivery is going through.');
            },
            60_000,
          );
        }
        await page.context().close();
      }

      // The central's page: its stores, with last push, what waits, lag and reconciliation.
      const storeId = (await api(store.url, live, 'GET', '/sync/status')).body.store_id as string;
      for (const width of WIDTHS) {
        const page = await logIn(central.url, width);
        expect(await page.isVisible('section#stores')).toBe(true);
        const row = page.locator(`section#stores tr:has(td[data-id="${storeId}"])`);
        expect(await row.count()).toBe(1);
        const cells = await row.locator('td').evaluateAll((tds) => tds.map((td) => [td.getAttribute('data-label'), td.textContent]));
        expect(cells.map(([label]) => label)).toEqual([
          'Store',
          'State',
          'Last push',
          'Waiting at the box',
          'Held here',
          'Refused',
          'Received, not applied',
          'Lag',
          'Reconciliation',
        ]);
        expect(cells[1][1]).toBe('ok');
        expect(cells[2][1]).toMatch(/^\d\d:\d\d, (just now|\d+ (s|min) ago)$/);
        // The box said at its last push that nothing was left behind it.
        expect(cells[3][1]).toBe('none');
        expect(cells[4][1]).toBe('0');
        expect(cells[5][1]).toBe('none');
        expect(cells[6][1]).toBe('none');
        expect(cells[7][1]).toMatch(/^\d+ (s|min)$/);
        expect(cells[8][1]).toBe('no difference reported');
        await localTimes(page);
        await fits(page, width);
        await page.screenshot({ path: join(SHOTS, `central-${width}.png`), fullPage: true });
        await page.context().close();
      }
      // The central's page lists stores only on a central.
      const storePage = await logIn(store.url, 1280);
      expect(await storePage.isVisible('section#stores')).toBe(false);
      await storePage.context().close();
      for (const width of WIDTHS)
        for (const name of ['store', 'store-sandbox', 'store-recovered', 'central']) expect(existsSync(join(SHOTS, `${name}-${width}.png`))).toBe(true);
    },
  );
});
