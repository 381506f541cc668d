import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { PageClient } from '../helpers/page-client.js';
import { until } from '../helpers/until.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount, appliedAtCentral, http, removeDir, startCentral, startStore, type TestStore } from '../sync/helpers.js';

// Issue 32: the central's page lists the records held for review past sync.review.* with a release
// and a reject button each (a manager's session, its CSRF token and a reason), the same decision as
// `posd sync held`, kept with the manager's name; in headless Chromium.
const CHROMIUM = '/usr/bin/chromium';
const PASSWORD = 'held-manager-2026';

let browser: Browser;
let central: TestServer;
let store: TestStore;
let acct: ReturnType<typeof addStoreAccount>;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  central = await startCentral({ config: { sync: { review: { per_record_cents: 2000, per_day_cents: 0 } } } });
  acct = addStoreAccount(central);
  store = await startStore(central.url, acct.key);
  const hash = await hashPassword(PASSWORD);
  tx(central.daemon.ctx.db, () => setManagerPassword(central.daemon.ctx.db, hash));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await store?.stop();
  if (store) removeDir(store.dataDir);
  await central?.stop();
});

const received = (id: string) =>
  central.daemon.ctx.db.prepare('SELECT outcome, note FROM sync_received WHERE id = ?').get(id) as { outcome: string; note: string | null };
const intentAtCentral = (id: string) => central.daemon.ctx.db.prepare('SELECT count(*) AS n FROM intents WHERE id = ?').get(id) as { n: number };

describe("the central's page and held records", () => {
  it('releases one and rejects another from the buttons, audited with the manager; refuses a form without its token', { timeout: 90_000 }, async () => {
    const sales: Array<{ intent: string; record: string }> = [];
    for (const amount of [2500, 3500]) {
      const sale = await http('POST', `${store.url}/api/cash_sales`, acct.key, { amount_in_cents: amount, currency: 'GTQ' });
      expect(sale.status).toBe(201);
      const rec = store.daemon.ctx.db.prepare("SELECT id FROM sync_outbox WHERE kind = 'cash_sale' AND payload LIKE ?").get(`%${sale.body.id}%`) as {
        id: string;
      };
      sales.push({ intent: sale.body.id, record: rec.id });
    }
    await appliedAtCentral(store);
    for (const s of sales) expect(received(s.record).outcome).toBe('held');

    // A form without the page's token changes nothing.
    const client = new PageClient(central.url);
    await client.login(PASSWORD);
    const refused = await client.post(`/ops/held/${sales[0].record}/release`, { _csrf: 'not-the-token', reason: 'x' });
    expect(refused.status).toBe(403);
    expect(received(sales[0].record).outcome).toBe('held');

    const context = await browser.newContext({ viewport: { width: 390, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${central.url}/`);
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(`${central.url}/`), page.click('button[type=submit]')]);
    const panel = 'section#held-review';
    expect(await page.locator(`${panel} td[data-record]`).count()).toBe(2);
    expect(await page.textContent(panel)).toContain('per_record_cents');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);

    // Release the first: applied by the held sweep, the manager's reason kept.
    const release = page.locator(`${panel} form.held-release[action="/ops/held/${sales[0].record}/release"]`);
    await release.locator('input[name=reason]').fill('checked the drawer');
    await Promise.all([page.waitForURL(/\/\?notice=/), release.locator('button').click()]);
    expect(await page.textContent('[role=status]')).toContain(`${sales[0].record} released`);
    await until('the released sale is applied', () => intentAtCentral(sales[0].intent).n === 1, 20_000);
    expect(received(sales[0].record)).toEqual({ outcome: 'applied', note: 'checked the drawer (manager manager, status page)' });

    // Reject the second: refused for good, nothing applied, the box told in its feed.
    const reject = page.locator(`${panel} form.held-reject[action="/ops/held/${sales[1].record}/reject"]`);
    await reject.locator('input[name=reason]').fill('not a sale');
    await Promise.all([page.waitForURL(/\/\?notice=/), reject.locator('button').click()]);
    expect(await page.textContent('[role=status]')).toContain(`${sales[1].record} rejected`);
    expect(received(sales[1].record)).toEqual({ outcome: 'rejected', note: 'not a sale (manager manager, status page)' });
    expect(intentAtCentral(sales[1].intent).n).toBe(0);
    const told = central.daemon.ctx.db.prepare("SELECT payload FROM sync_feed WHERE kind = 'record_rejected' AND object_id = ?").get(sales[1].record) as {
      payload: string;
    };
    expect(JSON.parse(told.payload)).toMatchObject({ code: 'review_rejected', field: 'payload' });
    // Nothing left to decide: the panel is gone.
    expect(await page.locator(panel).count()).toBe(0);
    await context.close();
  });
});
