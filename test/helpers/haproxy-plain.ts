import { expect } from 'vitest';

/**
 * deploy/haproxy.cfg without its TLS, listening on `127.0.0.1:port`: for the tests whose subject is
 * the routing and the failover (chaos, one log) with posd processes on loopback, plain as posd
 * serves there. Every other line stays. The TLS hops themselves are run by
 * test/deploy/haproxy.system.test.ts and the README's walk-through.
 */
export function plainHaproxyConfig(src: string, port: number): string {
  const out = src.replace(/^(\s*)bind "\$\{POSD_HAPROXY_BIND\}" ssl crt \S+$/m, `$1bind 127.0.0.1:${port}`).replace(/ ssl verify required ca-file \S+$/gm, '');
  // A changed deploy file fails here, not with HAProxy refusing to start.
  expect(out).toContain(`bind 127.0.0.1:${port}\n`);
  expect(out).not.toMatch(/ ssl (crt|verify) /);
  return out;
}
