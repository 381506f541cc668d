import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { networkInterfaces } from 'node:os';
import { Agent, request } from 'undici';
import { runPosd, spawnDaemon } from '../helpers/process.js';
import { freePort } from '../terminals/helpers/posd-process.js';

const dir = mkdtempSync(join(tmpdir(), 'posd-tls-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('posd init and posd tls ca', () => {
  it('make the box CA at init and print the same file and fingerprint after', async () => {
    const data = join(dir, 'data');
    const init = await runPosd(['init', '--data', data, '--json']);
    expect(init.code).toBe(0);
    const made = JSON.parse(init.stdout).tls_ca as { file: string; fingerprint: string };
    expect(made.file).toBe(join(data, 'tls', 'ca.pem'));
    expect(made.fingerprint).toBe(new X509Certificate(readFileSync(made.file)).fingerprint256);
    expect(readFileSync(join(data, 'tls', 'ca-key.sealed'), 'utf8')).not.toContain('PRIVATE KEY');

    const shown = await runPosd(['tls', 'ca', '--data', data]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(made.file);
    expect(shown.stdout).toContain(`SHA-256 ${made.fingerprint}`);
    expect((await runPosd(['tls', 'ca', '--data', data, '--pem'])).stdout).toBe(readFileSync(made.file, 'utf8'));

    const none = await runPosd(['tls', 'ca', '--data', join(dir, 'nothing')]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('posd init');
  });

  it('posd tls issue writes a certificate of the box CA for the names given, with its key, 0600', async () => {
    const data = join(dir, 'issuer');
    expect((await runPosd(['init', '--role', 'central', '--data', data])).code).toBe(0);
    const out = join(dir, 'lb.pem');
    const r = await runPosd(['tls', 'issue', '--data', data, '--name', 'central.example,127.0.0.1', 'Central.example', '--days', '30', '--out', out, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const ca = new X509Certificate(readFileSync(join(data, 'tls', 'ca.pem')));
    expect(JSON.parse(r.stdout)).toMatchObject({ file: out, names: ['central.example', '127.0.0.1'], ca_fingerprint: ca.fingerprint256 });
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const pem = readFileSync(out, 'utf8');
    // HAProxy's crt bundle: the certificate, then the CA, then the key.
    expect(pem.match(/-----BEGIN (CERTIFICATE|PRIVATE KEY)-----/g)).toEqual([
      '-----BEGIN CERTIFICATE-----',
      '-----BEGIN CERTIFICATE-----',
      '-----BEGIN PRIVATE KEY-----',
    ]);
    const cert = new X509Certificate(pem);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subjectAltName).toBe('DNS:central.example, IP Address:127.0.0.1');
    expect(cert.ca).toBe(false);
    const days = (Date.parse(cert.validTo) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29);
    expect(days).toBeLessThan(31);

    for (const [args, said] of [
      [['--name', 'not_a_name'], 'not a DNS name or IP address: not_a_name'],
      [['--name', 'ok.example', '--days', '900'], '--days: a whole number of days from 2 to 398'],
    ] as const) {
      const bad = await runPosd(['tls', 'issue', '--data', data, '--out', join(dir, 'bad.pem'), ...args]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(said);
    }
    const none = await runPosd(['tls', 'issue', '--data', join(dir, 'nothing'), '--name', 'x.example', '--out', join(dir, 'bad.pem')]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('posd init');
    expect(existsSync(join(dir, 'bad.pem'))).toBe(false);
  });

  it('a fresh install serving off loopback answers only over TLS, to a client trusting the CA file', async () => {
    const data = join(dir, 'fresh');
    expect((await runPosd(['init', '--data', data])).code).toBe(0);
    const port = await freePort();
    // No TLS setting at all: http.host 0.0.0.0 is what a box serving the shop's network is given.
    const daemon = spawnDaemon(['--data', data, '--host', '0.0.0.0', '--port', String(port)]);
    try {
      await daemon.waitFor(/posd listening/, 30_000);
      // One of the box's own addresses off loopback (the certificate names its interfaces).
      const lan = Object.values(networkInterfaces())
        .flat()
        .find((i) => i && !i.internal && i.family === 'IPv4')?.address;
      const host = lan ?? 'localhost';
      const trusting = new Agent({ connect: { ca: readFileSync(join(data, 'tls', 'ca.pem')) } });
      const ok = await request(`https://${host}:${port}/healthz`, { dispatcher: trusting });
      expect(ok.statusCode).toBe(200);
      await ok.body.text();
      await trusting.close();
      // Plain HTTP gets no answer at all, and neither does TLS without the CA.
      await expect(request(`http://${host}:${port}/healthz`)).rejects.toThrow();
      await expect(request(`https://${host}:${port}/healthz`)).rejects.toThrow(/self-signed|unable to verify|certificate/i);
    } finally {
      daemon.child.kill('SIGTERM');
      await daemon.exited;
    }
  }, 60_000);
});
