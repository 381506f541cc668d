import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, request as httpsRequest, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPosd } from '../helpers/process.js';
import { until } from '../helpers/until.js';
import { freePort } from '../terminals/helpers/posd-process.js';

// deploy/haproxy.cfg is the file production installs as /etc/haproxy/haproxy.cfg and the README's
// chain-pg walk-through runs unchanged (test/e2e/readme-walkthrough.system.test.ts). HAProxy comes from
// Debian's package (.ci/run installs it).
const HAPROXY = '/usr/sbin/haproxy';
const cfg = readFileSync('deploy/haproxy.cfg', 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'posd-haproxy-'));
const lbDir = join(dir, 'lb');
let caPem = '';
let otherCaPem = '';

async function posdOk(args: string[]): Promise<string> {
  const r = await runPosd(args);
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return r.stdout;
}

// The chain's CA is a core's box CA; HAProxy's certificate and the servers' come from `posd tls issue`
// there. Another installation's CA stands for a server (or client) outside the chain.
beforeAll(async () => {
  mkdirSync(lbDir);
  await posdOk(['init', '--role', 'central', '--data', join(dir, 'core')]);
  await posdOk(['init', '--role', 'central', '--data', join(dir, 'other')]);
  caPem = await posdOk(['tls', 'ca', '--pem', '--data', join(dir, 'core')]);
  otherCaPem = await posdOk(['tls', 'ca', '--pem', '--data', join(dir, 'other')]);
  writeFileSync(join(lbDir, 'ca.pem'), caPem);
  await posdOk(['tls', 'issue', '--data', join(dir, 'core'), '--name', '127.0.0.1', 'localhost', '--out', join(lbDir, 'haproxy.pem')]);
  await posdOk(['tls', 'issue', '--data', join(dir, 'core'), '--name', '127.0.0.1', '--out', join(dir, 'chain.pem')]);
  await posdOk(['tls', 'issue', '--data', join(dir, 'other'), '--name', '127.0.0.1', '--out', join(dir, 'rogue.pem')]);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function check(file: string, env: NodeJS.ProcessEnv = {}) {
  return spawnSync(HAPROXY, ['-c', '-f', file], { encoding: 'utf8', env: { ...process.env, ...env } });
}

describe('deploy/haproxy.cfg', () => {
  it('is accepted by haproxy -c with its TLS files', () => {
    const r = check('deploy/haproxy.cfg', { POSD_HAPROXY_TLS: lbDir });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toContain('Configuration file is valid');
  });

  it('is refused by haproxy -c once broken, or without its certificate (the check can fail)', () => {
    const broken = join(dir, 'broken.cfg');
    writeFileSync(broken, cfg.replace('use_backend posd_fronts if sync_path', 'use_backend posd_nowhere if sync_path'));
    const r = check(broken, { POSD_HAPROXY_TLS: lbDir });
    expect(r.status).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/posd_nowhere/);
    const none = check('deploy/haproxy.cfg', { POSD_HAPROXY_TLS: join(dir, 'nothing') });
    expect(none.status).not.toBe(0);
    expect(none.stdout + none.stderr).toContain(join(dir, 'nothing'));
  });

  it('sends /sync/* to the health-checked fronts and the rest to the leading core of two, all over TLS', () => {
    expect(cfg).toMatch(/^\s*presetenv POSD_HAPROXY_TLS \/etc\/haproxy\/posd$/m);
    expect(cfg).toMatch(/^\s*presetenv POSD_HAPROXY_BIND :443$/m);
    expect(cfg).toMatch(/\n\s+bind "\$\{POSD_HAPROXY_BIND\}" ssl crt "\$\{POSD_HAPROXY_TLS\}\/haproxy\.pem"\n/);
    expect(cfg).toMatch(/acl sync_path path_beg \/sync\/\n\s+use_backend posd_fronts if sync_path\n\s+default_backend posd_core\n/);
    expect(cfg).toMatch(/backend posd_fronts\n[\s\S]*option httpchk GET \/healthz[\s\S]*server front1 127\.0\.0\.1:4301\n\s+server front2 127\.0\.0\.1:4302\n/);
    // Two cores, each asked whether it leads: a standby's 503 at /readyz takes it out.
    expect(cfg).toMatch(
      /backend posd_core\n[\s\S]*option httpchk GET \/readyz\n\s+http-check expect status 200\n[\s\S]*server core1 127\.0\.0\.1:4300\n\s+server core2 127\.0\.0\.1:4303/,
    );
    // Both backends speak TLS to their servers and trust only the chain's CA.
    const tlsServers = /default-server check [^\n]* ssl verify required ca-file "\$\{POSD_HAPROXY_TLS\}\/ca\.pem"\n/g;
    expect(cfg.match(tlsServers)).toHaveLength(2);
    // No fixed maxconn (it refuses to start under a file limit below about twice its value): derived
    // from the limit, capped by fd-hard-limit.
    expect(cfg).not.toMatch(/^\s*maxconn\b/m);
    expect(cfg).toMatch(/^\s*fd-hard-limit 50000$/m);
  });
});

interface Backend {
  server: Server;
  port: number;
  requests: string[];
}

/** A stand-in for a front or a core: HTTPS with the given PEM bundle (certificate, CA, key). */
async function backend(name: string, bundle: string, readyz = 200): Promise<Backend> {
  const requests: string[] = [];
  const pem = readFileSync(bundle, 'utf8');
  const server = createHttpsServer({ cert: pem, key: pem }, (req, res) => {
    requests.push(req.url ?? '');
    const status = req.url === '/readyz' ? readyz : 200;
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ server: name }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as { port: number }).port, requests };
}

interface Answer {
  status: number;
  body: string;
  serial: string;
}

function get(port: number, path: string, ca?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path, ca, agent: false }, (res) => {
      const serial = new X509Certificate((res.socket as TLSSocket).getPeerCertificate().raw).serialNumber;
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, serial }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('HAProxy with deploy/haproxy.cfg over TLS (a real HAProxy, the TLS lines as shipped)', () => {
  const servers: Record<string, Backend> = {};
  let lb: ChildProcess | undefined;
  let lbPort = 0;
  let log = '';

  beforeAll(async () => {
    // front2 presents a certificate from another CA: HAProxy must not trust it. core2 is a standby.
    servers.front1 = await backend('front1', join(dir, 'chain.pem'));
    servers.front2 = await backend('front2', join(dir, 'rogue.pem'));
    servers.core1 = await backend('core1', join(dir, 'chain.pem'));
    servers.core2 = await backend('core2', join(dir, 'chain.pem'), 503);
    lbPort = await freePort();
    // Only the servers' ports and the log's target change; the bind and TLS lines are the file's.
    let text = cfg.replace(/^(\s*)log \/dev\/log local0$/m, '$1log stdout format raw local0');
    for (const [name, port] of [
      ['front1', 4301],
      ['front2', 4302],
      ['core1', 4300],
      ['core2', 4303],
    ] as const) {
      const line = `server ${name} 127.0.0.1:${port}`;
      expect(text).toContain(line);
      text = text.replace(line, `server ${name} 127.0.0.1:${servers[name].port}`);
    }
    const file = join(dir, 'haproxy.cfg');
    writeFileSync(file, text);
    // Master-worker (-W), as Debian's haproxy.service runs it: SIGUSR2 reloads, as `systemctl reload haproxy`.
    lb = spawn(HAPROXY, ['-W', '-db', '-f', file], {
      env: { ...process.env, POSD_HAPROXY_TLS: lbDir, POSD_HAPROXY_BIND: `127.0.0.1:${lbPort}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    lb.stdout!.on('data', (d) => (log = (log + d).slice(-20_000)));
    lb.stderr!.on('data', (d) => (log = (log + d).slice(-20_000)));
    const waitFor = (what: string, re: RegExp) =>
      until(what, () => re.test(log), 20_000).catch((err: Error) => {
        throw new Error(`${err.message}; haproxy: ${log}`);
      });
    await waitFor('HAProxy takes out the front whose certificate is not the chain CA', /posd_fronts\/front2 is DOWN/);
    await waitFor('HAProxy takes out the standby', /posd_core\/core2 is DOWN/);
  }, 60_000);

  afterAll(async () => {
    if (lb && lb.exitCode === null) {
      const gone = once(lb, 'exit');
      lb.kill('SIGTERM');
      await gone;
    }
    for (const s of Object.values(servers)) s.server.close();
  });

  it('answers a client that trusts the chain CA: /sync/* from the trusted front, the rest from the leading core', async () => {
    for (let i = 0; i < 6; i++) {
      expect(await get(lbPort, '/sync/time', caPem)).toMatchObject({ status: 200, body: '{"server":"front1"}' });
      expect(await get(lbPort, '/api/account', caPem)).toMatchObject({ status: 200, body: '{"server":"core1"}' });
    }
    // The front presenting another CA's certificate never got a request (its handshakes failed).
    expect(servers.front2.requests).toEqual([]);
    expect(servers.core2.requests.filter((u) => u !== '/readyz')).toEqual([]);
    expect(log).toMatch(/front2 is DOWN[^\n]*(SSL|certificate)/i);
  });

  it('refuses a client that does not trust the chain CA, or trusts another', async () => {
    await expect(get(lbPort, '/sync/time')).rejects.toMatchObject({ code: 'SELF_SIGNED_CERT_IN_CHAIN' });
    await expect(get(lbPort, '/sync/time', otherCaPem)).rejects.toMatchObject({ code: expect.stringMatching(/CERT|SIGNATURE/) });
  });

  it('serves a certificate issued again after a reload (the renewal in docs/central.md), the file kept 0600', async () => {
    const file = join(lbDir, 'haproxy.pem');
    const before = (await get(lbPort, '/sync/time', caPem)).serial;
    await posdOk(['tls', 'issue', '--data', join(dir, 'core'), '--name', '127.0.0.1', 'localhost', '--out', file]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const issued = new X509Certificate(readFileSync(file)).serialNumber;
    expect(issued).not.toBe(before);
    lb!.kill('SIGUSR2');
    await until('HAProxy serves the new certificate', async () => (await get(lbPort, '/sync/time', caPem).catch(() => undefined))?.serial === issued, 20_000);
  }, 30_000);
});
