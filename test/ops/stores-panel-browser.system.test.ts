import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';
import { seedStores } from './central-stores-seed.js';

// Issue 37: a central's stores panel at 1,000 stores, in a real browser: counts by state first, one
// page sorted by silence, a filter form and page links that work without a script, at a desktop's
// and a phone's width, with the verdict red for the silent stores.

const CHROMIUM = '/usr/bin/chromium';
const PASSWORD = 'thousand-stores-2026';
const N = 1000;
const SHOTS = process.env.POSD_STATUS_SHOTS ?? mkdtempSync(join(tmpdir(), 'posd-stores-shots-'));

let browser: Browser;
let server: TestServer;
let seeded: ReturnType<typeof seedStores>;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  server = await startTestServer({ config: { role: 'central' } });
  seeded = seedStores(server, N, Date.now());
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
  if (!process.env.POSD_STATUS_SHOTS) rmSync(SHOTS, { recursive: true, force: true });
});

async function logIn(width: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 }, isMobile: width < 500 });
  const page = await context.newPage();
  await page.goto(`${server.url}/`);
  await page.fill('#password', PASSWORD);
  await Promise.all([page.waitForURL(`${server.url}/`), page.click('button[type=submit]')]);
  return page;
}

const ids = (page: Page) => page.locator('section#stores tbody td[data-label="Store"]').evaluateAll((tds) => tds.map((td) => td.getAttribute('data-id')));

describe('the stores panel of a central with 1,000 stores, in a real browser', () => {
  for (const width of [1280, 390]) {
    it(`at ${width} px: counts, 50 rows the longest silent first, filter by state and text, pages`, async () => {
      const page = await logIn(width);
      // The verdict names the silent stores in red.
      expect(await page.getAttribute('#verdict', 'data-state')).toBe('problems');
      expect(await page.textContent('#verdict')).toContain('10 store(s) have not pushed for more than 24 h');
      const counts = await page.textContent('#store-counts');
      expect(counts).toContain(`1000 stores: 10 silent (no push for more than 24 h) · ${seeded.parked.length} with records parked · 5 not pushed yet`);
      expect(await ids(page)).toHaveLength(50);
      expect((await ids(page)).slice(0, 10)).toEqual([...seeded.silent].reverse());
      expect(await page.textContent('section#stores .pager')).toContain('Stores 1–50 of 1000');
      // Nothing is wider than the window, at 1,000 stores either.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      await page.screenshot({ path: join(SHOTS, `stores-${width}.png`), fullPage: width > 500 });

      // Next page, by its link.
      await Promise.all([page.waitForURL(/stores_page=2/), page.click('section#stores a[rel=next]')]);
      expect((await ids(page))[0]).toBe('store_0954');
      expect(await page.textContent('section#stores .pager')).toContain('Stores 51–100 of 1000');

      // The count of the records parked is a link to those stores.
      await Promise.all([page.waitForURL(/stores_state=attention/), page.click('#store-counts a[data-count-state="attention"]')]);
      expect((await ids(page)).sort()).toEqual(seeded.parked);

      // The form: silent stores of the account "Tienda 0" (stores numbered ...0).
      await page.selectOption('#stores_state', 'silent');
      await page.fill('#stores_find', 'Tienda 0');
      await Promise.all([page.waitForURL(/stores_find=Tienda\+0/), page.click('form.store-filter button[type=submit]')]);
      expect(await ids(page)).toEqual([...seeded.silent].reverse());
      expect(await page.inputValue('#stores_find')).toBe('Tienda 0');
      await page.fill('#stores_find', 'no such store');
      await Promise.all([page.waitForURL(/stores_find=no\+such/), page.click('form.store-filter button[type=submit]')]);
      expect(await page.textContent('section#stores')).toContain('No store matches this filter.');
      await page.context().close();
    });
  }
});
