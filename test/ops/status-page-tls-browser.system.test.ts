import { createHash, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { tx } from '../../src/db/database.js';
import { hashPassword } from '../../src/modules/ops/password.js';
import { setManagerPassword } from '../../src/modules/ops/store.js';

// Issue 39: the status page in a real browser over TLS, trusting the box CA and nothing else.
// Chromium is told to trust the CA by its public key: `--ignore-certificate-errors-spki-list` with
// the base64 SHA-256 of the CA's SubjectPublicKeyInfo, which Chromium matches against every
// certificate of the chain the server presents (no ignore-all switch, no NSS database). A
// browser without it is refused at the handshake.
const CHROMIUM = '/usr/bin/chromium';
const PASSWORD = 'tls-browser-pass-2026';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

let server: TestServer;
let trusting: Browser;
let untrusting: Browser;

/** What `--ignore-certificate-errors-spki-list` takes: base64(SHA-256(SPKI DER)). */
function spkiHash(pem: string): string {
  return createHash('sha256')
    .update(new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64');
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  server = await startTestServer({ config: { tls: { mode: 'on' } } });
  const hash = await hashPassword(PASSWORD);
  tx(server.daemon.ctx.db, () => setManagerPassword(server.daemon.ctx.db, hash));
  const ca = readFileSync(join(server.dataDir, 'tls', 'ca.pem'), 'utf8');
  trusting = await chromium.launch({ executablePath: CHROMIUM, args: [...ARGS, `--ignore-certificate-errors-spki-list=${spkiHash(ca)}`] });
  untrusting = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
});

afterAll(async () => {
  await trusting?.close();
  await untrusting?.close();
  await server?.stop();
});

describe('status page in a real browser over TLS', () => {
  it('trusting the box CA: logs in over https, a Secure session cookie, HSTS, the CA fingerprint shown', async () => {
    expect(server.url).toMatch(/^https:\/\//);
    const context = await trusting.newContext();
    const page = await context.newPage();
    const first = await page.goto(`${server.url}/`);
    expect(first?.headers()['strict-transport-security']).toBe('max-age=15552000');
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(`${server.url}/`), page.click('button[type=submit]')]);
    await page.waitForSelector('h1:text("posd status")');
    const cookie = (await context.cookies()).find((c) => c.name === 'posd_session');
    expect(cookie).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Strict' });
    const fingerprint = server.daemon.tls!.status.ca!.fingerprint;
    expect(await page.textContent('section#disk')).toContain(fingerprint);
    await context.close();
  });

  it('not trusting it: the browser refuses the box at the handshake', async () => {
    const page = await untrusting.newPage();
    await expect(page.goto(`${server.url}/`)).rejects.toThrow(/ERR_CERT_AUTHORITY_INVALID/);
    await page.close();
  });
});
