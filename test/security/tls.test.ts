import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import pino from 'pino';
import { publicBaseUrl, tlsEnabled, validateConfig, ConfigError } from '../../src/config.js';
import { ManualClock } from '../../devices/clock.js';
import { SecretBox } from '../../src/system/secret-box.js';
import { BoxPki } from '../../src/system/tls/box-pki.js';
import { ServerTls } from '../../src/system/tls/server-tls.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { TerminalSimulator, webSocketConnector } from '../../devices/simulator/index.js';
import { caByFingerprint } from '../../devices/websocket/index.js';

const DAY = 86_400_000;

describe('tls configuration', () => {
  it('is on by default off loopback, off on loopback, and can be forced either way', () => {
    expect(tlsEnabled(validateConfig({ http: { host: '0.0.0.0' } }))).toBe(true);
    expect(tlsEnabled(validateConfig({ http: { host: '192.168.1.20' } }))).toBe(true);
    expect(tlsEnabled(validateConfig({}))).toBe(false);
    expect(tlsEnabled(validateConfig({ http: { host: '::1' } }))).toBe(false);
    expect(tlsEnabled(validateConfig({ http: { host: '0.0.0.0' }, tls: { mode: 'off' } }))).toBe(false);
    expect(tlsEnabled(validateConfig({ tls: { mode: 'on' } }))).toBe(true);
    expect(publicBaseUrl(validateConfig({ http: { host: '0.0.0.0', port: 4242 } }))).toBe('https://127.0.0.1:4242');
  });

  it('refuses half a certificate pair and a bad mode, naming the setting', () => {
    expect(() => validateConfig({ tls: { cert_file: '/etc/posd/cert.pem' } })).toThrow(/tls.cert_file.*go together/);
    expect(() => validateConfig({ tls: { mode: 'maybe' } })).toThrow(ConfigError);
    expect(() => validateConfig({ tls: { mode: 'maybe' } })).toThrow(/tls.mode: must be one of auto, on, off/);
  });
});

describe('a box listening with TLS', () => {
  let server: TestServer;
  let trusting: Agent;
  let ca: string;

  beforeAll(async () => {
    server = await startTestServer({ config: { tls: { mode: 'on' } } });
    ca = readFileSync(join(server.dataDir, 'tls', 'ca.pem'), 'utf8');
    trusting = new Agent({ connect: { ca } });
  });
  afterAll(async () => {
    await trusting.close();
    await server.stop();
  });

  it('answers the API over https to a client that trusts the box CA, with HSTS', async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const res = await request(`${server.url}/api/account`, { headers: { 'x-secret-key': server.installation.keys.test }, dispatcher: trusting });
    expect(res.statusCode).toBe(200);
    expect(((await res.body.json()) as { id: string }).id).toBe(server.installation.sandbox_id);
    expect(res.headers['strict-transport-security']).toBe('max-age=15552000');
  });

  it('is refused by a client that does not trust the box CA', async () => {
    const untrusting = new Agent();
    await expect(request(`${server.url}/healthz`, { dispatcher: untrusting })).rejects.toThrow(/self-signed|unable to verify|certificate/i);
    await untrusting.close();
  });

  it('keeps the CA key sealed, and the certificate names the box', () => {
    const sealed = readFileSync(join(server.dataDir, 'tls', 'ca-key.sealed'), 'utf8');
    expect(sealed).toMatch(/^v1:/);
    expect(sealed).not.toContain('PRIVATE KEY');
    const cert = new X509Certificate(readFileSync(join(server.dataDir, 'tls', 'server.pem'), 'utf8'));
    expect(cert.subjectAltName).toContain('DNS:localhost');
    expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(cert.verify(new X509Certificate(ca).publicKey)).toBe(true);
  });

  it('links the simulator over wss trusting the box CA, and not without it', async () => {
    const created = await request(`${server.url}/api/terminals`, {
      method: 'POST',
      headers: { 'x-secret-key': server.installation.keys.test, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Counter' }),
      dispatcher: trusting,
    });
    expect(created.statusCode).toBe(201);
    const terminal = (await created.body.json()) as { id: string; pairing_token: string };
    const url = `${server.url.replace(/^https/, 'wss')}/terminals/link`;
    const refused = new TerminalSimulator({ terminalId: terminal.id, token: terminal.pairing_token, connect: webSocketConnector(url, { pingIntervalMs: 0 }) });
    const failed = refused.waitFor('connect_failed');
    void refused.start();
    expect((await failed).error).toMatch(/self-signed|unable to verify|certificate/i);
    await refused.stop();
    const sim = new TerminalSimulator({ terminalId: terminal.id, token: terminal.pairing_token, connect: webSocketConnector(url, { ca, pingIntervalMs: 0 }) });
    const welcome = await sim.start();
    expect(welcome).toMatchObject({ type: 'welcome' });
    await sim.stop();
  });

  it('links the simulator over wss given only the CA fingerprint posd tls ca prints, and refuses another', async () => {
    const created = await request(`${server.url}/api/terminals`, {
      method: 'POST',
      headers: { 'x-secret-key': server.installation.keys.test, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Pinned' }),
      dispatcher: trusting,
    });
    const terminal = (await created.body.json()) as { id: string; pairing_token: string };
    const url = `${server.url.replace(/^https/, 'wss')}/terminals/link`;
    const fingerprint = new X509Certificate(ca).fingerprint256;
    // Typed as a person might: no colons, lower case.
    const pinned = await caByFingerprint(url, fingerprint.replace(/:/g, '').toLowerCase());
    expect(new X509Certificate(pinned).fingerprint256).toBe(fingerprint);
    const sim = new TerminalSimulator({
      terminalId: terminal.id,
      token: terminal.pairing_token,
      connect: webSocketConnector(url, { ca: pinned, pingIntervalMs: 0 }),
    });
    expect(await sim.start()).toMatchObject({ type: 'welcome' });
    await sim.stop();
    const other = `${'AB:'.repeat(31)}AB`;
    await expect(caByFingerprint(url, other)).rejects.toThrow(new RegExp(`presented no certificate with SHA-256 ${other}.*${fingerprint}`));
    await expect(caByFingerprint(url, 'AB:CD')).rejects.toThrow(/not a SHA-256 fingerprint/);
  });

  it("sets the page's cookies Secure", async () => {
    const res = await request(`${server.url}/`, { dispatcher: trusting });
    await res.body.text();
    const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
    expect(cookies.length).toBeGreaterThan(0);
    for (const c of cookies) expect(c).toMatch(/; Secure$/);
    expect(res.headers['strict-transport-security']).toBeDefined();
  });

  it('shows TLS and the CA fingerprint on the status view, and tls.mode off as bad', async () => {
    const { statusView } = await import('../../src/modules/ops/panels.js');
    const view = statusView(server.daemon.ctx);
    expect(view.tls).toEqual({ on: true, mode: 'on', ca_file: join(server.dataDir, 'tls', 'ca.pem'), ca_fingerprint: new X509Certificate(ca).fingerprint256 });
    const off = statusView({
      ...server.daemon.ctx,
      config: { ...server.config, http: { ...server.config.http, host: '0.0.0.0' }, tls: { ...server.config.tls, mode: 'off' } },
    });
    expect(off.tls).toMatchObject({ on: false, mode: 'off' });
    // On the page: green when on, red (class bad) when a setting turned it off.
    const { statusPage } = await import('../../src/modules/ops/page.js');
    expect(statusPage(view, 'csrf')).toContain('<td class="ok">on (https, wss)</td>');
    expect(statusPage(off, 'csrf')).toContain('<td class="bad">off by setting (tls.mode): plain HTTP</td>');
  });
});

describe('renewal and reload', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'posd-tls-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('renews the server certificate before it expires, on the moved clock, and hands it to the server', async () => {
    const config = validateConfig({ data_dir: dir, tls: { mode: 'on', check_interval_ms: 60_000 }, log: { level: 'silent' } });
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
    const tls = await ServerTls.start(config, clock, pino({ level: 'silent' }));
    const first = new X509Certificate(tls.material.cert);
    expect(Date.parse(first.validTo) - clock.now()).toBeGreaterThan(390 * DAY);
    const contexts: unknown[] = [];
    tls.attach({ setSecureContext: (c: unknown) => contexts.push(c) } as never);

    // Still 40 days left: the check keeps it.
    clock.advance(357 * DAY);
    await tls.check();
    expect(contexts).toHaveLength(0);

    // 20 days left (under renew_before_days = 30): the timer's next check issues a new one.
    const reloaded = once(tls, 'reloaded');
    clock.advance(20 * DAY);
    await reloaded;
    const second = new X509Certificate(tls.material.cert);
    expect(second.serialNumber).not.toBe(first.serialNumber);
    expect(Date.parse(second.validTo)).toBeGreaterThan(Date.parse(first.validTo));
    expect(contexts).toHaveLength(1);
    // The CA is kept: a till that pinned it trusts the renewed certificate.
    expect(second.checkIssued(new X509Certificate(readFileSync(join(dir, 'tls', 'ca.pem'), 'utf8')))).toBe(true);
    tls.stop();
  });

  it("reloads a manager's own certificate files when they change, without a restart", async () => {
    const own = join(dir, 'own');
    const pkiA = new BoxPki(validateConfig({ data_dir: join(own, 'a'), tls: { names: ['a.example'] } }), new SecretBox(Buffer.alloc(32, 1)), Date.now);
    const pkiB = new BoxPki(validateConfig({ data_dir: join(own, 'b'), tls: { names: ['b.example'] } }), new SecretBox(Buffer.alloc(32, 2)), Date.now);
    const a = (await pkiA.ensureServer()).material;
    const b = (await pkiB.ensureServer()).material;
    const certFile = join(dir, 'cert.pem');
    const keyFile = join(dir, 'key.pem');
    writeFileSync(certFile, a.cert);
    writeFileSync(keyFile, a.key);
    const server = await startTestServer({ config: { tls: { mode: 'on', cert_file: certFile, key_file: keyFile } } });
    try {
      const caA = new Agent({ connect: { ca: (await pkiA.ensureCa()).pem } });
      const caB = new Agent({ connect: { ca: (await pkiB.ensureCa()).pem } });
      expect((await request(`${server.url}/healthz`, { dispatcher: caA })).statusCode).toBe(200);
      const tls = server.daemon.tls as ServerTls;
      const reloaded = once(tls, 'reloaded');
      writeFileSync(keyFile, b.key);
      writeFileSync(certFile, b.cert);
      await reloaded;
      expect(tls.status.names.join(' ')).toContain('b.example');
      // A new connection gets the new certificate: B's CA trusts it, A's no longer does.
      expect((await request(`${server.url}/healthz`, { dispatcher: caB })).statusCode).toBe(200);
      await caA.close();
      const fresh = new Agent({ connect: { ca: (await pkiA.ensureCa()).pem } });
      await expect(request(`${server.url}/healthz`, { dispatcher: fresh })).rejects.toThrow();
      await Promise.all([fresh.close(), caB.close()]);
    } finally {
      await server.stop();
    }
  });

  it('starts on one PEM bundle of posd tls issue as both files, with no data folder (a central-front)', async () => {
    const pki = new BoxPki(validateConfig({ data_dir: join(dir, 'chain') }), new SecretBox(Buffer.alloc(32, 3)), Date.now);
    const issued = await pki.issueFor(['front.example', '127.0.0.1'], 30);
    const bundle = join(dir, 'front.pem');
    writeFileSync(bundle, `${issued.chain}${issued.key}`);
    const nowhere = join(dir, 'no-data-folder');
    const config = validateConfig({ data_dir: nowhere, tls: { mode: 'on', cert_file: bundle, key_file: bundle } });
    const tls = await ServerTls.start(config, new ManualClock(Date.now()), pino({ level: 'silent' }));
    expect(tls.status).toMatchObject({ source: 'files', names: ['DNS:front.example', 'IP Address:127.0.0.1'] });
    expect(new X509Certificate(tls.material.cert).checkIssued(new X509Certificate((await pki.ensureCa()).pem))).toBe(true);
    // Nothing was made where a data folder would be (no box key, no CA).
    expect(existsSync(nowhere)).toBe(false);
    tls.stop();
  });
});
