/**
 * deploy/haproxy.cfg without its TLS, listening on `127.0.0.1:port`: for the tests and benches
 * whose subject is the routing and the failover (chaos, one log, the chain-pg bench) with posd
 * processes on loopback, plain as posd serves there. Every other line stays. The TLS hops
 * themselves are run by test/deploy/haproxy.system.test.ts and the README's walk-through.
 */
export function plainHaproxyConfig(src: string, port: number): string {
  const out = src.replace(/^(\s*)bind "\$\{POSD_HAPROXY_BIND\}" ssl crt \S+$/m, `$1bind 127.0.0.1:${port}`).replace(/ ssl verify required ca-file \S+$/gm, '');
  // A changed deploy file fails here, not with HAProxy refusing to start.
  if (!out.includes(`bind 127.0.0.1:${port}\n`) || / ssl (crt|verify) /.test(out)) {
    throw new Error("deploy/haproxy.cfg's bind or server TLS lines changed: update test/helpers/haproxy-plain.ts");
  }
  return out;
}
