import { X509Certificate } from 'node:crypto';
import { connect, type DetailedPeerCertificate, type PeerCertificate } from 'node:tls';

/** `AB:CD:…`, as `posd tls ca` prints it; colons, spaces and case do not matter. */
function normalise(fingerprint: string): string {
  return fingerprint.replace(/[^0-9a-f]/gi, '').toUpperCase();
}

/**
 * The certificate, among those the `wss://` (or `https://`) server at `url` presents, whose SHA-256
 * fingerprint is `fingerprint` (the box CA's, as `posd tls ca` prints it), as PEM: what a terminal
 * given only that fingerprint then trusts as its `ca`, and nothing else. The chain is read once
 * without trusting it; nothing in it is trusted unless its fingerprint is the one the terminal was
 * given (by a person, out of band). Rejects naming what the server presented otherwise.
 */
export function caByFingerprint(url: string, fingerprint: string, timeoutMs = 10_000): Promise<string> {
  const want = normalise(fingerprint);
  if (want.length !== 64) return Promise.reject(new Error(`not a SHA-256 fingerprint (64 hex digits, as posd tls ca prints it): ${fingerprint}`));
  const u = new URL(url);
  const port = Number(u.port || 443);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, servername: /^[\d.:]+$/.test(host) ? undefined : host, rejectUnauthorized: false, timeout: timeoutMs });
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    socket.once('timeout', () => fail(new Error(`tls: no handshake with ${u.host} in ${timeoutMs} ms`)));
    socket.once('error', fail);
    socket.once('secureConnect', () => {
      const seen: string[] = [];
      let cert: PeerCertificate | undefined = socket.getPeerCertificate(true);
      while (cert?.raw) {
        const x509 = new X509Certificate(cert.raw);
        seen.push(x509.fingerprint256);
        if (normalise(x509.fingerprint256) === want) {
          socket.end();
          return resolve(x509.toString());
        }
        const next: PeerCertificate | undefined = (cert as DetailedPeerCertificate).issuerCertificate;
        cert = next && next !== cert ? next : undefined;
      }
      fail(new Error(`tls: ${u.host} presented no certificate with SHA-256 ${fingerprint} (it presented ${seen.join(', ') || 'none'})`));
    });
  });
}
