import { X509Certificate } from 'node:crypto';
import { connect, type PeerCertificate, type DetailedPeerCertificate } from 'node:tls';

/**
 * What a store box trusts of its central's TLS (issue 39): the certificate it was told to pin at
 * `posd init --central-url https://… --central-ca FILE | --central-fingerprint SHA256`, as PEM.
 * With a pin, that certificate is the only trust anchor of the link: the system's CAs are not
 * consulted, so neither a public CA nor a store's own intercepting proxy can stand in for the
 * central. Without one (an https central with a public certificate), the system's CAs are used.
 */
export interface CentralPin {
  /** The pinned certificate (the central's box CA, or its server certificate), PEM. */
  ca: string;
  /** Its SHA-256 fingerprint, `AB:CD:…`. */
  fingerprint: string;
}

/** `AB:CD:…` (what `posd tls ca` and browsers show), from that form, bare hex, or `sha256:`-prefixed. */
export function normaliseFingerprint(text: string): string | undefined {
  const hex = text
    .trim()
    .replace(/^sha-?256[:=\s]*/i, '')
    .replace(/[:\s]/g, '')
    .toUpperCase();
  if (!/^[0-9A-F]{64}$/.test(hex)) return undefined;
  return hex.match(/../g)!.join(':');
}

/** The pin a PEM certificate file gives (its first certificate). */
export function pinOfPem(pem: string): CentralPin {
  const cert = new X509Certificate(pem);
  return { ca: cert.toString(), fingerprint: cert.fingerprint256 };
}

/**
 * The TLS options of every connection to the central: the pinned certificate as the only trust
 * anchor. `allowPartialTrustChain` lets a pinned server certificate (not a CA) anchor the chain too.
 * The host name is still checked against the certificate's names.
 */
export function pinnedTls(pin: CentralPin | undefined): { ca?: string; allowPartialTrustChain?: boolean } {
  return pin ? { ca: pin.ca, allowPartialTrustChain: true } : {};
}

/**
 * The chain the server at `url` presents, read without trusting it: only `posd init
 * --central-fingerprint` uses it, to find the certificate with that fingerprint, which is then
 * pinned and checked properly on every later connection.
 */
export function presentedChain(url: URL, timeoutMs: number): Promise<X509Certificate[]> {
  return new Promise((resolve, reject) => {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const socket = connect({
      host,
      port: Number(url.port || 443),
      servername: /^[\d.]+$|:/.test(host) ? undefined : host,
      rejectUnauthorized: false,
      timeout: timeoutMs,
    });
    socket.once('secureConnect', () => {
      const chain: X509Certificate[] = [];
      let c: PeerCertificate | DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
      const seen = new Set<string>();
      while (c?.raw && !seen.has(c.fingerprint256)) {
        seen.add(c.fingerprint256);
        chain.push(new X509Certificate(c.raw));
        c = (c as DetailedPeerCertificate).issuerCertificate;
      }
      socket.end();
      resolve(chain);
    });
    socket.once('timeout', () => socket.destroy(Object.assign(new Error('no TLS handshake in time'), { code: 'ETIMEDOUT' })));
    socket.once('error', reject);
  });
}

/** TLS verification failures of Node/OpenSSL: the central's certificate is not the one pinned. */
const CERT_CODES = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS_CERT_ALTNAME|ERR_SSL|EPROTO/;

/** Whether an error (or its cause) is a refused certificate. */
export function isCertificateError(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } } | undefined;
  return CERT_CODES.test(`${e?.code ?? ''} ${e?.cause?.code ?? ''}`);
}

/** The refused certificate in a manager's words, naming what was pinned and what to do. */
export function certificateRefusal(err: unknown, pin: CentralPin | undefined): string {
  const e = err as { code?: string; cause?: { code?: string }; message?: string };
  const code = e.code ?? e.cause?.code ?? '';
  if (/ALTNAME/.test(code)) {
    return `tls: the central's certificate does not name this address (${code}); add the address to the central's tls.names, or use a name it has`;
  }
  return pin
    ? `tls: the central's certificate is not the pinned one (SHA-256 ${pin.fingerprint}) (${code}); if the central's CA really changed, pin the new one (posd tls ca at the central, then sync.central_ca_file here)`
    : `tls: the central's certificate is not trusted by this box's system CAs (${code}); pin the central's CA (posd init --central-ca or --central-fingerprint, or sync.central_ca_file)`;
}
