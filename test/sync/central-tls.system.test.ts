import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { until } from '../helpers/until.js';
import { PageClient } from '../helpers/page-client.js';
import { killStarted, posd, posdExit, removeTempDirs, requireBuild, startDaemonProcess, tempDir, type DaemonProcess } from './e2e/processes.js';

// Issue 39: a store box joins its central over HTTPS and trusts exactly the certificate
// `posd init` was told (the central's box CA, by file or fingerprint); a central presenting any
// other is refused at init, by the running link (sync status, doctor) and by `posd sync now`.
// Every part is a real process: the central (TLS on, its own CA), the store, the CLI.
let central: DaemonProcess;
let centralDir: string;
let ca: { file: string; fingerprint: string };
let otherCa: { file: string; fingerprint: string };
let key: string;

/** The store's status page as its manager sees it (password set with the CLI, as a manager does). */
async function readPage(url: string, data: string): Promise<string> {
  const pw = 'tls-page-pass-2026';
  const child = spawn(process.execPath, [join(import.meta.dirname, '../../dist/posd/posd.js'), 'manager', 'set-password', '--password-stdin', '--data', data], {
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  child.stdin.end(`${pw}\n`);
  await once(child, 'exit');
  const page = new PageClient(url);
  expect((await page.login(pw)).status).toBe(303);
  return (await page.get('/')).text;
}

beforeAll(async () => {
  requireBuild();
  centralDir = tempDir('posd-central-tls-');
  const inst = await posd(['init', '--role', 'central', '--data', centralDir, '--json']);
  const acct = await posd(['accounts', 'create', '--name', 'Store 7', '--organization', inst.organization_id, '--data', centralDir, '--json']);
  key = (await posd(['keys', 'create', '--account', acct.account_id, '--env', 'live', '--data', centralDir, '--json'])).key;
  ca = await posd(['tls', 'ca', '--data', centralDir, '--json']);
  // Another box's CA: what an impostor on the store's network could at best present.
  const other = tempDir('posd-other-ca-');
  otherCa = (await posd(['init', '--data', other, '--json'])).tls_ca;
  // On loopback TLS is off by default: `on` makes the central answer only over TLS here.
  central = await startDaemonProcess(centralDir, { role: 'central', tls: { mode: 'on' } });
}, 60_000);

afterAll(async () => {
  await killStarted();
  removeTempDirs();
});

describe('a store joining its central over HTTPS', () => {
  it('serves the central over https with its own CA', () => {
    expect(central.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('refuses a central whose certificate is not the pinned one, and creates nothing', async () => {
    const wrongFp = tempDir('posd-store-wrongfp-');
    const byFp = await posdExit(['init', '--data', wrongFp, '--central-url', central.url, '--central-key', key, '--central-fingerprint', otherCa.fingerprint]);
    expect(byFp.code).toBe(2);
    expect(byFp.stderr).toContain(`none of its certificates has the fingerprint ${otherCa.fingerprint}`);
    expect(byFp.stderr).toContain(ca.fingerprint); // what it did present, to compare with posd tls ca there
    expect(existsSync(join(wrongFp, 'posd.db'))).toBe(false);

    const wrongCa = tempDir('posd-store-wrongca-');
    const byCa = await posdExit(['init', '--data', wrongCa, '--central-url', central.url, '--central-key', key, '--central-ca', otherCa.file]);
    expect(byCa.code).toBe(2);
    expect(byCa.stderr).toContain(`tls: the central's certificate is not the pinned one (SHA-256 ${otherCa.fingerprint})`);
    expect(existsSync(join(wrongCa, 'posd.db'))).toBe(false);

    // Without a pin the system's CAs decide, and none of them vouches for a box CA.
    const none = await posdExit(['init', '--data', tempDir('posd-store-nopin-'), '--central-url', central.url, '--central-key', key]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("not trusted by this box's system CAs");

    const both = await posdExit([
      'init',
      '--data',
      tempDir('posd-store-both-'),
      '--central-url',
      central.url,
      '--central-key',
      key,
      '--central-ca',
      ca.file,
      '--central-fingerprint',
      otherCa.fingerprint,
    ]);
    expect(both.stderr).toContain(`has the fingerprint ${ca.fingerprint}, not ${otherCa.fingerprint}`);
    const plain = await posdExit([
      'init',
      '--data',
      tempDir('posd-store-plain-'),
      '--central-url',
      'http://127.0.0.1:9',
      '--central-key',
      key,
      '--central-ca',
      ca.file,
    ]);
    expect(plain.stderr).toContain('pin an https:// central');
  }, 60_000);

  it('joins pinning the fingerprint, pushes a sale over https, and refuses the central once its certificate is not the pinned one', async () => {
    const storeDir = tempDir('posd-store-tls-');
    // The fingerprint as a manager may type it: lower case, no colons.
    const typed = ca.fingerprint.replace(/:/g, '').toLowerCase();
    const joined = await posdExit(['init', '--data', storeDir, '--central-url', central.url, '--central-key', key, '--central-fingerprint', typed]);
    expect(joined.code, joined.stderr).toBe(0);
    expect(joined.stdout).toContain(`pinned        SHA-256 ${ca.fingerprint}`);

    let store = await startDaemonProcess(storeDir, {});
    const sale = await request(`${store.url}/api/cash_sales`, {
      method: 'POST',
      headers: { 'x-secret-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ amount_in_cents: 2500, currency: 'GTQ' }),
    });
    const made = (await sale.body.json()) as { checkout: { id: string } };
    expect(sale.statusCode).toBe(201);
    await posd(['sync', 'now', '--data', storeDir]);

    // Read back at the central over https, trusting its CA only.
    const trusting = new Agent({ connect: { ca: readFileSync(ca.file, 'utf8') } });
    try {
      await until('the sale is at the central', async () => {
        const res = await request(`${central.url}/api/checkouts?items=5`, { headers: { 'x-secret-key': key }, dispatcher: trusting });
        const list = (await res.body.json()) as Array<{ id: string }>;
        return list.some((c) => c.id === made.checkout.id);
      });
    } finally {
      await trusting.close();
    }
    const ok = await posd(['sync', 'status', '--data', storeDir, '--json']);
    expect(ok).toMatchObject({ connected: true, records_waiting: 0, central_pinned: ca.fingerprint });

    // The store is told another CA (as after a man in the middle took the central's address): the
    // running link, `posd sync now` and doctor all refuse it and say why.
    await store.kill('SIGTERM');
    store = await startDaemonProcess(storeDir, { sync: { central_ca_file: otherCa.file } });
    const refused = `tls: the central's certificate is not the pinned one (SHA-256 ${otherCa.fingerprint})`;
    await until('the link reports the refused certificate', async () => {
      const s = await posd(['sync', 'status', '--data', storeDir, '--json']);
      return typeof s.last_error === 'string' && s.last_error.includes(refused) && s.connected === false;
    });
    // The page's sync panel shows the refusal and the fingerprint pinned, for the manager to compare.
    const page = await readPage(store.url, storeDir);
    expect(page).toContain('the central&#39;s certificate is not the pinned one');
    expect(page).toMatch(new RegExp(`Central pinned</td><td[^>]*>SHA-256 ${otherCa.fingerprint}</td>`));
    // Raised at once (no sync.alert_link_down_ms wait), in the words the page and the log use.
    const alerts = (await posd(['sync', 'status', '--data', storeDir, '--json'])).alerts as Array<{ code: string; message: string; fix: string }>;
    expect(alerts).toContainEqual(
      expect.objectContaining({
        code: 'sync_link_down',
        message: expect.stringContaining("the central's certificate was not accepted"),
        fix: expect.stringContaining('posd tls ca'),
      }),
    );
    await store.kill('SIGTERM');
    const now = await posdExit(['sync', 'now', '--data', storeDir]);
    expect(now.code).toBe(0); // the pin from init: the real central is accepted again
    const env = { ...process.env, POSD_SYNC_CENTRAL_CA_FILE: otherCa.file };
    const { execFile } = await import('node:child_process');
    const doctor = await new Promise<string>((resolve) =>
      execFile(process.execPath, [join(import.meta.dirname, '../../dist/posd/posd.js'), 'doctor', '--data', storeDir], { env }, (_e, out, err) =>
        resolve(`${out}${err}`),
      ),
    );
    expect(doctor).toContain(`the central's certificate was not accepted [${refused}`);
  }, 90_000);
});
