/**
 * Managers with names (issue 36): the single status-page password of earlier builds becomes the
 * manager named `manager` at first open; each manager logs in with their own name and password
 * into a session of their own; an override pressed on the page is audited under the person's
 * name; a removed manager's session and token stop working at once. Real daemon and HTTP.
 */
import { afterEach, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { PageClient } from '../helpers/page-client.js';
import { tx } from '../../src/db/database.js';
import { hashPassword, verifyPassword } from '../../src/modules/ops/password.js';
import {
  addManager,
  adoptSinglePassword,
  issueManagerToken,
  listManagers,
  managerByName,
  managerByToken,
  removeManager,
} from '../../src/modules/ops/managers.js';
import { AccountsService } from '../../src/accounts/service.js';
import { offlineAudit } from '../../src/modules/terminals/stored/changes.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function login(page: PageClient, name: string, password: string) {
  const form = await page.get('/');
  return page.post('/login', { name, password, _csrf: PageClient.csrf(form.text) });
}

it('the single password becomes the manager named manager; it still logs in, and is rehashed with argon2id', async () => {
  server = await startTestServer();
  const db = server.daemon.ctx.db;
  // What a box set up with the single status-page password holds (its scrypt hash, in meta).
  const { scryptSync, randomBytes } = await import('node:crypto');
  const salt = randomBytes(16);
  const legacy = [
    'scrypt',
    32768,
    8,
    1,
    salt.toString('base64'),
    scryptSync('the old password', salt, 32, { N: 32768, r: 8, p: 1, maxmem: 64 << 20 }).toString('base64'),
  ].join('$');
  db.prepare(`INSERT INTO meta (key, value) VALUES ('manager_password', ?)`).run(legacy);
  expect(tx(db, () => adoptSinglePassword(db, new Date().toISOString()))).toBe(true);
  expect(tx(db, () => adoptSinglePassword(db, new Date().toISOString()))).toBe(false);
  expect(listManagers(db)).toEqual([expect.objectContaining({ name: 'manager', has_token: false })]);
  expect(db.prepare(`SELECT value FROM meta WHERE key = 'manager_password'`).get()).toBeUndefined();

  // One manager: the name may be left empty, as on the old one-field form.
  const page = new PageClient(server.url);
  expect((await login(page, '', 'the old password')).status).toBe(303);
  expect((await page.get('/')).text).toContain('Log out');
  const rehashed = managerByName(db, 'manager')!.password_hash;
  expect(rehashed).toMatch(/^argon2id\$/);
  expect(await verifyPassword('the old password', rehashed)).toBe(true);
});

it('each manager has a session of their own; the page audits the override under their name; removal ends it', async () => {
  server = await startTestServer();
  const ctx = server.daemon.ctx;
  const [ana, luis] = [await hashPassword('ana password 1'), await hashPassword('luis password 1')];
  const now = new Date().toISOString();
  const luisToken = tx(ctx.db, () => {
    addManager(ctx.db, 'Ana', ana, now);
    return issueManagerToken(ctx.db, addManager(ctx.db, 'Luis', luis, now).id);
  });
  expect(managerByToken(ctx.db, luisToken)?.name).toBe('Luis');

  const anaPage = new PageClient(server.url);
  const luisPage = new PageClient(server.url);
  // With two managers the name is required, and a password opens only its own manager's door.
  expect((await login(anaPage, '', 'ana password 1')).status).toBe(401);
  expect((await login(anaPage, 'Luis', 'ana password 1')).text).toContain('Wrong name or password');
  expect((await login(anaPage, 'ana', 'ana password 1')).status).toBe(303);
  expect((await login(luisPage, 'Luis', 'luis password 1')).status).toBe(303);
  const anaView = await anaPage.get('/');
  expect(anaView.text).toContain('<span class="muted">Ana</span>');
  expect((await luisPage.get('/')).text).toContain('<span class="muted">Luis</span>');

  // Ana presses Allow on the page: the audit names her.
  const account = new AccountsService(ctx.db, ctx.clock).account(server.installation.sandbox_id)!;
  const until = new Date(Date.now() + 3_600_000).toISOString();
  const allowed = await anaPage.post('/ops/offline/allow', { _csrf: PageClient.csrf(anaView.text), account: account.id, until, reason: 'card queue' });
  expect(allowed.status).toBe(303);
  expect(offlineAudit(ctx, account)[0]).toMatchObject({ action: 'override_allow', actor: 'Ana', reason: 'card queue' });

  // Luis is removed: his page session and his token stop at once; Ana's goes on.
  tx(ctx.db, () => removeManager(ctx.db, managerByName(ctx.db, 'Luis')!.id));
  expect((await luisPage.get('/')).text).toContain('name="password"');
  expect(managerByToken(ctx.db, luisToken)).toBeUndefined();
  expect((await anaPage.get('/')).text).toContain('Log out');
});

it("the API takes a manager's page session with its CSRF token for a change, audited under their name; the cookie alone is refused", async () => {
  server = await startTestServer();
  const ctx = server.daemon.ctx;
  const hash = await hashPassword('marta password 1');
  tx(ctx.db, () => addManager(ctx.db, 'Marta Gómez', hash, new Date().toISOString()));
  const page = new PageClient(server.url);
  expect((await login(page, 'Marta Gómez', 'marta password 1')).status).toBe(303);
  const csrf = PageClient.csrf((await page.get('/')).text);
  const cookie = [...page.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const patch = (headers: Record<string, string>) =>
    server!.api('PATCH', '/offline_policy', { headers: { cookie, ...headers }, body: { max_count: 7, reason: 'short-handed tonight' } });

  // The session cookie alone (any page the browser opens could send it): 403, nothing changed.
  const cookieOnly = await patch({});
  expect(cookieOnly.status).toBe(403);
  expect(cookieOnly.body.code).toBe('manager_credential_required');
  expect((await patch({ 'x-csrf-token': 'not-the-token' })).status).toBe(403);
  expect((await server.api('GET', '/offline_audit')).body).toEqual([]);

  const ok = await patch({ 'x-csrf-token': csrf });
  expect(ok.status).toBe(200);
  expect(ok.body.standing_caps).toMatchObject({ max_count: 7 });
  expect((await server.api('GET', '/offline_audit')).body).toEqual([
    expect.objectContaining({ action: 'caps_set', actor: 'Marta Gómez', reason: 'short-handed tonight', after: expect.objectContaining({ max_count: 7 }) }),
  ]);
});
