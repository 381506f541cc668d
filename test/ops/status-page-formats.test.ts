import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { PageClient } from '../helpers/page-client.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';
import { accountsOf } from '../../src/accounts/service.js';

// Issue 34: the status page shows each account's event formats (spec 6.3) and who may frame its
// checkout page, where a merchant moving from the hosted service looks.

const PASSWORD = 'formats on the page 2026';
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
  const hash = await hashPassword(PASSWORD);
  tx(s.daemon.ctx.db, () => setManagerPassword(s.daemon.ctx.db, hash));
});

afterAll(async () => {
  await s?.stop();
});

const row = (html: string, id: string) => new RegExp(`<tr data-account="${id}">(.*?)</tr>`).exec(html)?.[1] ?? '';

describe("the status page names each account's event formats", () => {
  it('unified by default for the sandbox, and follows a change at once', async () => {
    const page = new PageClient(s.url);
    await page.login(PASSWORD);
    const { account_id: live, sandbox_id: sandbox } = s.installation;
    let html = (await page.get('/')).text;
    expect(html).toContain('<section id="accounts"');
    expect(row(html, sandbox)).toContain('data-formats="unified"');
    expect(row(html, sandbox)).toContain('any origin (sandbox)');
    expect(row(html, live)).toContain('<td>none</td>');

    accountsOf(s.daemon.ctx).setEventFormat(live, 'both');
    accountsOf(s.daemon.ctx).updateSettings(live, { embed_origins: ['https://shop.example'] });
    html = (await page.get('/')).text;
    expect(row(html, live)).toContain('data-formats="both"');
    expect(row(html, live)).toContain('legacy payment_intent.*');
    expect(row(html, live)).toContain('https://shop.example');
    expect(row(html, sandbox)).toContain('data-formats="both"');
    expect(html).toContain('--event-formats both');
  });
});
