/**
 * The outage view of the status page in headless Chromium: the banner while the box is offline
 * (how long, what waits, the countdown to the oldest stored payment's deadline), the manager's
 * override button (audited under the logged-in manager's name, sent to the terminal at once), and the report
 * after the outage with the declined-later sale to collect.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { startHarness, type Harness } from '../terminals/helpers/harness.js';
import { ManualClock } from '../../devices/index.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';
import { storeSide } from '../../src/sync/store/sync-store.js';
import { syncStatus } from '../../src/sync/status.js';
import { STATE } from '../../src/sync/shared/state.js';
import { offlineAudit, setAccountCaps } from '../../src/modules/terminals/stored/changes.js';
import { bridgeOf } from '../../src/modules/terminals/link/index.js';
import { AccountsService } from '../../src/accounts/service.js';
import { localText } from '../../src/modules/ops/time.js';

const CHROMIUM = '/usr/bin/chromium';
const PASSWORD = 'outage-pass-2026';
// A central is configured (nobody listens there). This box never joined, so its sync worker does
// not run: the test writes what the worker writes on an unanswered attempt (sync/store/client.ts
// noteFailure: the state key and the outage window); test/sync/outage-windows.system.test.ts drives the
// real worker.
const UNREACHABLE = { central_url: 'http://127.0.0.1:9', central_key: 'sk_central_unused' };
const T0 = Date.parse('2026-06-05T14:00:00.000Z');

let browser: Browser;
let h: Harness;
const clock = new ManualClock(T0);

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  h = await startHarness('websocket', { protocol: 2, clock, config: { sync: UNREACHABLE } });
  const ctx = h.server.daemon.ctx;
  const hash = await hashPassword(PASSWORD);
  tx(ctx.db, () => setManagerPassword(ctx.db, hash));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

const lastPolicy = () => h.terminal.received.filter((m) => m.type === 'offline_policy').at(-1) as { allowed: boolean; remaining_count: number } | undefined;

async function storeOne(amount: number, reference: string, extra: Record<string, unknown> = {}) {
  const c = await h.charge({ amount_in_cents: amount, ...extra });
  expect(c.status).toBe(201);
  await h.terminal.next('charge', (m) => m.command_id === c.body.id);
  await h.terminal.result(c.body.id, 'stored', { offline_reference: reference, card: { network: 'visa', last4: '1881' } });
  await h.terminal.next('result_ack', (m) => m.command_id === c.body.id);
  return c.body as { id: string; checkout_id: string };
}

it('offline: banner with duration, waiting payments and countdown; the override button; after: the report with the sale to collect', async () => {
  const ctx = h.server.daemon.ctx;
  const sync = storeSide(ctx.db);
  tx(ctx.db, () => {
    sync.setState(STATE.lastAttemptOk, 0);
    sync.setState(STATE.linkDownSince, new Date(T0).toISOString());
    sync.openOutage('central', new Date(T0).toISOString());
  });
  clock.advance(30 * 60_000);
  const kept = await storeOne(4_000, 'off-1', { description: 'Mesa 4', tax_id: '1234567-8' });
  clock.advance(15 * 60_000);
  const declined = await storeOne(2_500, 'off-2', { external_id: 'till-77', description: 'Mesa 9, Ana Pérez 5555-0101', tax_id: 'CF' });
  clock.advance(15 * 60_000);

  const context = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
  const page = await context.newPage();
  const failures: string[] = [];
  page.on('requestfailed', (r) => failures.push(r.url()));
  await page.goto(`${h.server.url}/`);
  await page.fill('#password', PASSWORD);
  await Promise.all([page.waitForURL(`${h.server.url}/`), page.click('button[type=submit]')]);

  // The banner: an hour down, two payments stored (65.00 in all), the first one's 48 h deadline.
  const banner = (await page.textContent('section#outage-banner'))!;
  expect(banner).toContain('Offline for 1 h 00 min');
  expect(banner).toContain('the central (internet) and the card processor');
  expect(await page.textContent('#outage-stored')).toBe('Stored card payments waiting: 2 stored (GTQ 65.00).');
  expect(await page.textContent('#outage-records')).toBe(`Records waiting for the central: ${syncStatus(ctx.config, ctx.db).records_waiting}.`);
  // Times in the box's zone with their age; the exact time in the element's datetime.
  expect(await page.textContent('#outage-deadline')).toContain(`within 47 h 30 min (by ${localText('2026-06-07T14:30:00.000Z', clock.now())})`);
  expect(await page.getAttribute('#outage-deadline time', 'datetime')).toBe('2026-06-07T14:30:00.000Z');
  // The banner sits between the verdict and the panels, and the page still fits the phone.
  expect(await page.evaluate(() => document.querySelector('#verdict')!.nextElementSibling!.id)).toBe('outage-banner');
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);

  // The manager forces offline acceptance until 20:00 on the box's clock, with a reason.
  const accountId = (ctx.db.prepare('SELECT account_id FROM terminals WHERE id = ?').get(h.terminalId) as { account_id: string }).account_id;
  const account = new AccountsService(ctx.db, ctx.clock).account(accountId)!;
  // This account does not store card payments unless a manager says so.
  tx(ctx.db, () => setAccountCaps(ctx, account, { allowed: false }, { actor: 'owner', reason: 'no offline cards by default' }));
  bridgeOf(ctx).refreshPolicies(accountId); // what the 5 s re-read does (the clock stands still here)
  await expect.poll(() => lastPolicy()?.allowed).toBe(false);
  await page.reload();
  expect(await page.textContent(`section#offline-payments td[data-account="${accountId}"]`)).toBe('refused');
  const until = new Date(T0 + 6 * 3600_000);
  const p = (n: number) => String(n).padStart(2, '0');
  const local = `${until.getFullYear()}-${p(until.getMonth() + 1)}-${p(until.getDate())}T${p(until.getHours())}:${p(until.getMinutes())}`;
  await page.selectOption('#offline-allow select[name=account]', accountId);
  await page.fill('#offline-allow input[name=until]', local);
  await page.fill('#offline-allow input[name=reason]', 'queue at the door, processor down');
  const policies = h.terminal.count('offline_policy');
  await Promise.all([page.waitForURL(/\/\?notice=/), page.click('#offline-allow button[type=submit]')]);
  expect(await page.textContent('[role=status]')).toBe(
    `Offline card payments allowed for ${account.name} until ${localText(until.toISOString(), clock.now())}.`,
  );
  expect(await page.getAttribute(`section#offline-payments td[data-override="${accountId}"] time`, 'datetime')).toBe(until.toISOString());
  expect(await page.textContent(`section#offline-payments td[data-override="${accountId}"]`)).toContain(
    `until ${localText(until.toISOString(), clock.now())} by manager: queue at the door, processor down`,
  );
  const audit = offlineAudit(ctx, account);
  expect(audit[0]).toMatchObject({ action: 'override_allow', actor: 'manager', reason: 'queue at the door, processor down' });
  expect(audit[0].after).toMatchObject({ allowed: true, until: until.toISOString() });
  // Sent to the terminal at once, not at the next periodic refresh (the clock does not move).
  expect(h.terminal.count('offline_policy')).toBe(policies + 1);
  expect(lastPolicy()).toMatchObject({ allowed: true, remaining_count: 98 });
  expect(await page.textContent(`section#offline-payments td[data-account="${accountId}"]`)).toBe('allowed');

  // A form without its CSRF token changes nothing.
  // (The session cookie is sent, as a forged cross-site form would have it sent by a lax browser.)
  const forged = await page.request.post(`${h.server.url}/ops/offline/revoke`, { form: { account: accountId, reason: 'x' }, maxRedirects: 0 });
  expect(forged.status()).toBe(403);
  expect(offlineAudit(ctx, account)).toHaveLength(2);

  await Promise.all([page.waitForURL(/\/\?notice=/), page.click(`td[data-override="${accountId}"] button:text("End override")`)]);
  expect(await page.textContent('[role=status]')).toBe(`Override ended for ${account.name}.`);
  expect(offlineAudit(ctx, account)[0]).toMatchObject({ action: 'override_revoke', actor: 'manager' });
  expect(await page.textContent(`section#offline-payments td[data-account="${accountId}"]`)).toBe('refused');
  await expect.poll(() => lastPolicy()?.allowed).toBe(false);

  // The link comes back at 15:30; the processor answers: one approved, one declined.
  clock.advance(30 * 60_000);
  tx(ctx.db, () => {
    sync.setState(STATE.lastAttemptOk, 1);
    sync.setState(STATE.linkDownSince, null);
    sync.closeOutage('central', new Date(clock.now()).toISOString());
  });
  clock.advance(5 * 60_000);
  await h.terminal.forward(kept.id, 'off-1', 'approved');
  await h.terminal.next('forward_ack', (a) => a.offline_reference === 'off-1');
  await h.terminal.forward(declined.id, 'off-2', 'declined');
  await h.terminal.next('forward_ack', (a) => a.offline_reference === 'off-2');

  await page.goto(`${h.server.url}/`);
  expect(await page.isVisible('section#outage-banner')).toBe(false);
  const report = page.locator('section#outages article.outage').first();
  expect(
    await report
      .locator('h3')
      .first()
      .locator('time')
      .evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime'))),
  ).toEqual(['2026-06-05T14:00:00.000Z', '2026-06-05T15:35:00.000Z']);
  expect(await report.locator('h3').first().textContent()).toContain(
    `Outage ${localText('2026-06-05T14:00:00.000Z', clock.now())} to ${localText('2026-06-05T15:35:00.000Z', clock.now())}`,
  );
  const text = (await report.textContent())!;
  expect(text).toMatch(/approved1GTQ 40\.00/);
  expect(text).toMatch(/declined1GTQ 25\.00/);
  expect(text).toContain('Declined later: to collect (1)');
  expect(text).toContain('till-77 · Mesa 9, Ana Pérez 5555-0101');
  expect(text).toContain('GTQ 25.00 (visa 4242)'); // the card as the processor's answer named it
  expect(text).toContain('unpaid: to collect');
  // The declined sale's checkout is owed again: listed once, to collect, not again as left open; the approved one is paid.
  expect(text).toContain('Checkouts left open (0)');
  expect(await report.locator(`td[data-id="${declined.checkout_id}"]`).count()).toBe(0);
  expect(text).not.toContain(kept.checkout_id);
  expect(await report.getAttribute('data-reconciliation')).not.toBe('ongoing');
  expect(failures).toEqual([]);
  await context.close();
});
