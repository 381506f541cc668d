import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { PageClient } from '../helpers/page-client.js';
import { fixtureWebhooksModule } from '../helpers/ops-fixtures.js';
import { MODULES } from '../../src/modules/index.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { tx } from '../../src/db/database.js';
import { hashPassword, needsRehash, verifyPassword } from '../../src/modules/ops/password.js';
import { randomBytes, scryptSync } from 'node:crypto';
import { latestVersion } from '../../src/db/migrate.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';
import { managerByName } from '../../src/modules/ops/managers.js';
import { provideStatus } from '../../src/system/status-sources.js';

const PASSWORD = 'open sesame 2026';
let server: TestServer | undefined;
let receiver: Server | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
  receiver?.close();
  receiver = undefined;
});

async function withPassword(s: TestServer, password = PASSWORD): Promise<void> {
  const hash = await hashPassword(password);
  tx(s.daemon.ctx.db, () => setManagerPassword(s.daemon.ctx.db, hash));
}

describe('manager password', () => {
  it('is stored as argon2id, verifies only the right password; a password of the scrypt days still verifies', async () => {
    const hash = await hashPassword(PASSWORD);
    expect(hash).toMatch(/^argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(needsRehash(hash)).toBe(false);
    const salt = randomBytes(16);
    const legacy = [
      'scrypt',
      32768,
      8,
      1,
      salt.toString('base64'),
      scryptSync(PASSWORD, salt, 32, { N: 32768, r: 8, p: 1, maxmem: 64 << 20 }).toString('base64'),
    ].join('$');
    expect(await verifyPassword(PASSWORD, legacy)).toBe(true);
    expect(await verifyPassword('not it at all', legacy)).toBe(false);
    expect(needsRehash(legacy)).toBe(true);
    expect(hash).not.toContain(PASSWORD);
    expect(await verifyPassword(PASSWORD, hash)).toBe(true);
    expect(await verifyPassword(`${PASSWORD} `, hash)).toBe(false);
    expect(await verifyPassword(PASSWORD, 'scrypt$garbage')).toBe(false);
    expect(await hashPassword(PASSWORD)).not.toBe(hash); // salted
  });
});

describe('status page', () => {
  it('says how to set a password when none is set, and cannot be logged into', async () => {
    server = await startTestServer();
    const page = new PageClient(server.url);
    const first = await page.get('/');
    expect(first.status).toBe(200);
    // With the box's own data folder (issue 37: without it the command set another folder's password).
    expect(first.text).toContain(`posd managers add &lt;your name&gt; --data ${server.daemon.ctx.config.data_dir}`);
    const login = await page.post('/login', { password: 'anything at all', _csrf: 'x' });
    expect(login.status).toBe(403);
    expect(page.cookies.has('posd_session')).toBe(false);
  });

  it('logs in with the password into a session cookie that is HttpOnly and SameSite=Strict', async () => {
    server = await startTestServer();
    await withPassword(server);
    const page = new PageClient(server.url);
    const form = await page.get('/');
    expect(form.text).toContain('name="password"');
    expect(form.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(form.headers['content-security-policy']).toContain("default-src 'none'");

    // A login post without the form's token (another site's form) is refused before the password.
    const forged = await page.post('/login', { password: PASSWORD, _csrf: 'forged' });
    expect(forged.status).toBe(403);
    expect(page.cookies.has('posd_session')).toBe(false);

    const wrong = await page.login('not the password');
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Wrong name or password');
    expect(page.cookies.has('posd_session')).toBe(false);

    const ok = await page.login(PASSWORD);
    expect(ok.status).toBe(303);
    expect(ok.headers.location).toBe('/');
    const cookie = ok.setCookies.find((c) => c.startsWith('posd_session='))!;
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).not.toMatch(/Secure/);
    const value = cookie.split(';')[0].split('=')[1];
    // Only a hash of the cookie is stored.
    expect(JSON.stringify(server.daemon.ctx.db.prepare('SELECT * FROM manager_sessions').all())).not.toContain(value);

    const status = await page.get('/');
    expect(status.text).toContain('posd status');
    expect(status.text).toMatch(
      /<section id="sales" data-state="ok"><h2>Today&#39;s sales<\/h2><p class="muted counts">Live sales only\. <a href="\/\?sandbox=1">Show sandbox sales<\/a><\/p><p class="muted">No sales yet today.<\/p>/,
    );
    expect(status.text).toMatch(/<section id="terminals" data-state="ok">.*No terminals registered\./);
    expect(status.text).toMatch(/<section id="commands" data-state="ok">.*Nothing in flight\./);
    expect(status.text).toMatch(/<section id="webhooks" data-state="ok">.*Every delivery is going through\./);
    // A box that never joined a central says so instead of showing numbers.
    expect(status.text).toMatch(/<section id="sync" data-state="not_configured">/);
    expect(status.text).toMatch(/<section id="disk" data-state="ok">/);
    expect(status.text).toContain(`schema ${latestVersion()}`);
    expect(status.text).toContain('Last backup</td><td class="bad">never');
  });

  it('marks the cookie Secure when published over https', async () => {
    server = await startTestServer({ config: { http: { port: 0, host: '127.0.0.1', public_url: 'https://store.example' } } });
    await withPassword(server);
    const { port } = server.daemon.app.server.address() as { port: number };
    const ok = await new PageClient(`http://127.0.0.1:${port}`).login(PASSWORD);
    expect(ok.setCookies.find((c) => c.startsWith('posd_session='))).toMatch(/; Secure$/);
  });

  it('logout needs the CSRF token; a new password ends every session', async () => {
    server = await startTestServer();
    await withPassword(server);
    const page = new PageClient(server.url);
    await page.login(PASSWORD);
    const status = await page.get('/');
    const forged = await page.post('/logout', { _csrf: 'nope' });
    expect(forged.status).toBe(403);
    expect((await page.get('/')).text).toContain('Log out'); // still logged in

    const out = await page.post('/logout', { _csrf: PageClient.csrf(status.text) });
    expect(out.status).toBe(303);
    expect((await page.get('/')).text).toContain('name="password"');

    await page.login(PASSWORD);
    expect((await page.get('/')).text).toContain('Log out');
    await withPassword(server, 'another password');
    expect((await page.get('/')).text).toContain('name="password"');
    expect(await verifyPassword('another password', managerByName(server.daemon.ctx.db, 'manager')!.password_hash)).toBe(true);
  });

  it('limits password guesses per address', async () => {
    const clock = new ManualClock();
    server = await startTestServer({ clock });
    await withPassword(server);
    const page = new PageClient(server.url);
    for (let i = 0; i < 10; i++) expect((await page.login(`guess ${i}`)).status).toBe(401);
    const blocked = await page.login(PASSWORD);
    expect(blocked.status).toBe(429);
    expect(page.cookies.has('posd_session')).toBe(false);
    clock.advance(5 * 60_000);
    expect((await page.login(PASSWORD)).status).toBe(303);
  });

  it("shows today's live cash sales by currency from the money area; sandbox sales only on the toggle, apart", async () => {
    server = await startTestServer();
    await withPassword(server);
    const live = server.installation.keys.live;
    for (const amount of [1000, 2550]) {
      expect((await server.api('POST', '/cash_sales', { key: live, body: { amount_in_cents: amount, currency: 'GTQ' } })).status).toBe(201);
    }
    expect((await server.api('POST', '/cash_sales', { key: live, body: { amount_in_cents: 700, currency: 'USD' } })).status).toBe(201);
    expect((await server.api('POST', '/cash_sales', { body: { amount_in_cents: 99_999, currency: 'GTQ' } })).status).toBe(201); // sandbox
    const page = new PageClient(server.url);
    await page.login(PASSWORD);
    const text = (await page.get('/')).text;
    expect(text).toContain(saleRow('cash', 'GTQ', 2, 'GTQ 35.50'));
    expect(text).toContain(saleRow('cash', 'USD', 1, 'USD 7.00'));
    expect(text).not.toContain('999.99');
    // The page says what it counts, and offers the sandbox's sales apart.
    expect(text).toContain('Live sales only. <a href="/?sandbox=1">Show sandbox sales</a>');
    expect(text).not.toContain('id="sandbox-sales"');
    const withSandbox = (await page.get('/?sandbox=1')).text;
    expect(withSandbox).toContain('Live sales; sandbox sales below, apart. <a href="/">Hide sandbox sales</a>');
    const sandbox = /<div id="sandbox-sales">([\s\S]*?)<\/div>/.exec(withSandbox)![1];
    expect(sandbox).toContain(saleRow('cash', 'GTQ', 1, 'GTQ 999.99'));
    expect(sandbox).not.toContain('35.50');
    // The live table is still live only.
    expect(withSandbox.slice(0, withSandbox.indexOf('id="sandbox-sales"'))).toContain(saleRow('cash', 'GTQ', 2, 'GTQ 35.50'));
    expect(withSandbox.slice(0, withSandbox.indexOf('id="sandbox-sales"'))).not.toContain('999.99');
    // An unknown toggle value is refused, not taken as "off".
    expect((await page.get('/?sandbox=yes')).status).toBe(400);
  });

  it("shows today's sales from the area's read function, asked for the box's local day", async () => {
    const asked: string[][] = [];
    server = await startTestServer({
      modules: [
        ...MODULES,
        {
          name: 'fixture-sales',
          api: (_app, ctx) =>
            provideStatus(ctx, {
              salesBetween: (from, until) => {
                asked.push([from, until]);
                return [{ method: 'cash', currency: 'GTQ', count: 3, amount_in_cents: 12_550 }];
              },
              sync: () => {
                throw new Error('sync table locked');
              },
            }),
        },
      ],
    });
    await withPassword(server);
    const page = new PageClient(server.url);
    await page.login(PASSWORD);
    const text = (await page.get('/')).text;
    expect(text).toContain(saleRow('cash', 'GTQ', 3, 'GTQ 125.50'));
    const [from, until] = asked[0];
    expect(Date.parse(until) - Date.parse(from)).toBeGreaterThanOrEqual(23 * 3600_000);
    expect(Date.parse(from)).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(until)).toBeGreaterThan(Date.now());
    // One failing source shows its error; the rest of the page still renders.
    expect(text).toMatch(/<section id="sync" data-state="error">.*could not read: sync table locked/);
  });

  it("resends an endpoint's failed deliveries with its one button, through the area function, only with the CSRF token", async () => {
    let hits = 0;
    receiver = createServer((_req, res) => {
      hits++;
      res.writeHead(204).end();
    }).listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const port = (receiver.address() as { port: number }).port;
    server = await startTestServer({ modules: [...MODULES, fixtureWebhooksModule(() => `http://127.0.0.1:${port}/hook`)] });
    await withPassword(server);
    const insert = server.daemon.ctx.db.prepare("INSERT INTO fixture_deliveries VALUES (?, 'https://erp.example/hook', ?, 'failed', 5, ?, ?)");
    for (let i = 0; i < 37; i++) insert.run(`wd_${String(i).padStart(2, '0')}`, 'charge.succeeded', 500, `2026-01-01T00:${String(i).padStart(2, '0')}:00.000Z`);
    insert.run('wd_last', 'intent.succeeded', 503, '2026-01-01T01:00:00.000Z');
    const page = new PageClient(server.url);
    await page.login(PASSWORD);
    const status = await page.get('/');
    expect(status.text).toContain('https://erp.example/hook');
    // One line for the endpoint, with the count and the latest failure: not 38 rows, not 38 buttons.
    expect(status.text).toMatch(/38 failed deliveries, last: intent\.succeeded 503 at <time datetime="2026-01-01T01:00:00\.000Z"/);
    const section = /<section id="webhooks"[\s\S]*?<\/section>/.exec(status.text)![0];
    expect(section.match(/<button/g)).toHaveLength(1);
    expect(status.text).toContain('action="/ops/endpoints/we_fixture/replay"');
    expect(status.text).toContain('Resend the 38 failed</button>');
    expect(status.text).not.toContain('/resend"');

    const forged = await page.post('/ops/endpoints/we_fixture/replay', { _csrf: 'forged', since: '2000-01-01T00:00:00Z' });
    expect(forged.status).toBe(403);
    expect(hits).toBe(0);
    const anonymous = new PageClient(server.url);
    expect((await anonymous.post('/ops/endpoints/we_fixture/replay', { _csrf: PageClient.csrf(status.text), since: '2000-01-01T00:00:00Z' })).status).toBe(303);
    expect(hits).toBe(0);

    const since = /name="since" value="([^"]+)"/.exec(status.text)![1];
    const done = await page.post('/ops/endpoints/we_fixture/replay', { _csrf: PageClient.csrf(status.text), since });
    expect(done.status).toBe(303);
    expect(hits).toBe(38);
    const after = await page.get(done.headers.location as string);
    expect(after.text).toContain('Resent 38: 38 answered 2xx.');
    expect(after.text).toContain('Every delivery is going through.');
  });
});

/** One row of a sales table as the page writes it (each cell labelled for the phone's stacked rows). */
function saleRow(method: string, currency: string, count: number, total: string): string {
  return `<td data-label="Method">${method}</td><td data-label="Currency">${currency}</td><td data-label="Count">${count}</td><td data-label="Total">${total}</td>`;
}
