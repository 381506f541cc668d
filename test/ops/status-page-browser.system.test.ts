import { createServer, type Server } from 'node:http';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { fixtureWebhooksModule } from '../helpers/ops-fixtures.js';
import { MODULES } from '../../src/modules/index.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';

const CHROMIUM = '/usr/bin/chromium';
const PASSWORD = 'browser-pass-2026';
const SIMULATOR = join(import.meta.dirname, '../../dist/devices/simulator/cli.js');

let browser: Browser;
let server: TestServer;
let receiver: Server;
let hits = 0;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  receiver = createServer((_req, res) => {
    hits++;
    res.writeHead(200).end('ok');
  }).listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const port = (receiver.address() as { port: number }).port;
  server = await startTestServer({
    modules: [...MODULES, fixtureWebhooksModule(() => `http://127.0.0.1:${port}/hook`)],
    config: { terminals: { ping_interval_ms: 0 } },
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
  receiver?.close();
});

describe('status page in a real browser', () => {
  it('on a phone: logs in, shows the panels without sideways scrolling, resends a failed delivery, logs out', async () => {
    server.daemon.ctx.db
      .prepare("INSERT INTO fixture_deliveries VALUES ('wd_b1', 'https://erp.example/hook', 'cash_sale.created', 'failed', 3, 503, '2026-01-01T00:00:00.000Z')")
      .run();
    const context = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
    const page = await context.newPage();
    const failures: string[] = [];
    page.on('requestfailed', (r) => failures.push(r.url()));
    await page.goto(`${server.url}/`);
    await page.fill('#password', 'not it at all');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('[role=alert]')).toBe('Wrong name or password.');

    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(`${server.url}/`), page.click('button[type=submit]')]);
    await page.waitForSelector('h1:text("posd status")');
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === 'posd_session')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    // Scripts cannot read the session cookie.
    expect(await page.evaluate(() => document.cookie)).not.toContain('posd_session');

    for (const id of ['terminals', 'commands', 'sales', 'webhooks', 'sync', 'disk']) {
      expect(await page.isVisible(`section#${id}`)).toBe(true);
    }
    expect(await page.textContent('section#terminals')).toContain('No terminals registered.');
    expect(await page.textContent('section#sync')).toContain('not configured');
    expect(await page.textContent('section#disk')).toContain('Free disk');
    // The stylesheet loaded (no CDN: same origin) and the layout fits the phone's width.
    expect(await page.evaluate(() => getComputedStyle(document.querySelector('section')!).borderRadius)).toBe('8px');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);

    expect(await page.textContent('section#webhooks')).toContain('https://erp.example/hook');
    await Promise.all([page.waitForURL(/\/\?notice=/), page.click('section#webhooks button:text("Resend the 1 failed")')]);
    expect(hits).toBe(1);
    expect(await page.textContent('[role=status]')).toBe('Resent 1: 1 answered 2xx.');
    expect(await page.textContent('section#webhooks')).toContain('Every delivery is going through.');

    await Promise.all([page.waitForURL(`${server.url}/`), page.click('header button:text("Log out")')]);
    expect(await page.isVisible('#password')).toBe(true);
    expect(failures).toEqual([]);
    await context.close();
  });
});

describe('terminals on the status page', () => {
  it('shows a simulated terminal available with its command in flight, then unavailable once the simulator stops', async () => {
    if (!existsSync(SIMULATOR)) throw new Error(`${SIMULATOR} is missing: build first (npm test runs tsc before vitest)`);
    const trm = (await server.api('POST', '/terminals', { body: { name: 'Caja 1' } })).body;
    const sim: ChildProcess = spawn(
      process.execPath,
      [
        SIMULATOR,
        '--url',
        `${server.url.replace('http', 'ws')}/terminals/link`,
        '--terminal-id',
        trm.id,
        '--token',
        trm.pairing_token,
        '--behaviour',
        'never_answer',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    sim.stdout!.on('data', (d) => (out += d));
    try {
      await expect.poll(() => out.includes('"welcome"'), { timeout: 10_000 }).toBe(true);
      const cmd = (
        await server.api('POST', '/terminal_session_commands', {
          body: { terminal_id: trm.id, external_id: 'browser-1', amount_in_cents: 4250, currency: 'GTQ' },
        })
      ).body;
      expect(cmd.id).toBeTruthy();

      const context = await browser.newContext({ viewport: { width: 390, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${server.url}/`);
      await page.fill('#password', PASSWORD);
      await Promise.all([page.waitForURL(`${server.url}/`), page.click('button[type=submit]')]);
      const cell = `section#terminals td[data-terminal="${trm.id}"]`;
      expect(await page.textContent(cell)).toBe('available');
      expect(await page.textContent('section#terminals')).toContain('Caja 1 (sandbox)');
      const scrape = async () => await (await fetch(`${server.url}/metrics`)).text();
      // Dispatch is asynchronous: the command is pending or already taken by the terminal.
      expect(await scrape()).toMatch(/posd_terminal_commands_in_flight\{state="(pending|dispatched)"\} 1/);
      expect(await scrape()).toContain('posd_terminals{availability="available"} 1');
      // The command by the till's reference and its terminal by name; the ids stay in the titles.
      const commands = await page.textContent('section#commands');
      expect(commands).toContain('browser-1');
      expect(commands).toContain('Caja 1 (sandbox)');
      expect(commands).not.toContain(cmd.id);
      expect(commands).not.toContain(trm.id);
      expect(await page.getAttribute(`section#commands td[data-id="${trm.id}"]`, 'title')).toBe(trm.id);
      expect(await page.getAttribute(`section#commands td[data-id="${cmd.id}"]`, 'title')).toBe(cmd.id);
      expect(commands).toContain('GTQ 42.50');

      sim.kill('SIGTERM');
      await new Promise((r) => sim.once('exit', r));
      await expect
        .poll(
          async () => {
            await page.reload();
            return page.textContent(cell);
          },
          { timeout: 10_000 },
        )
        .toBe('unavailable');
      expect(await page.getAttribute(cell, 'class')).toBe('bad');
      expect(await scrape()).toContain('posd_terminals{availability="unavailable"} 1');
      await context.close();
    } finally {
      if (sim.exitCode === null) sim.kill('SIGKILL');
    }
  });
});
