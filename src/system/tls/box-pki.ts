import { X509Certificate, createPrivateKey, KeyObject, webcrypto, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { hostname, networkInterfaces } from 'node:os';
import { isIP } from 'node:net';
// tsyringe, inside @peculiar/x509, needs the Reflect metadata API before the library loads.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import type { Config } from '../../config.js';
import type { SecretBox } from '../secret-box.js';
import { tlsFiles } from './files.js';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;
/** The box CA outlives any box: tills pin it once. */
const CA_VALIDITY_DAYS = 20 * 365;

export { tlsFiles };

export interface CaInfo {
  file: string;
  /** SHA-256 of the CA certificate's DER, `AB:CD:…` as browsers and `openssl x509 -fingerprint -sha256` show it. */
  fingerprint: string;
  pem: string;
}

export interface IssuedCertificate {
  /** The certificate, then the CA's (PEM). */
  chain: string;
  /** Its private key, PKCS#8 PEM, in clear. */
  key: string;
  notAfter: number;
}

export interface ServerMaterial {
  cert: string;
  key: string;
  notAfter: number;
  names: string[];
}

/** The names and addresses the box answers to: its hostname, localhost, http.host, its interfaces, `tls.names`. */
export function boxNames(config: Pick<Config, 'http' | 'tls'>): string[] {
  const names = new Set<string>(['localhost', '127.0.0.1', '::1', hostname().toLowerCase()]);
  const host = config.http.host;
  if (host && host !== '0.0.0.0' && host !== '::') names.add(host.toLowerCase());
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) if (!i.internal || i.family === 'IPv4') names.add(i.address.toLowerCase().replace(/%.*$/, ''));
  }
  for (const n of config.tls.names) names.add(n.toLowerCase());
  return [...names].sort();
}

function keyPem(key: webcrypto.CryptoKey): string {
  return KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }) as string;
}

async function importKey(pem: string): Promise<webcrypto.CryptoKey> {
  return createPrivateKey(pem).toCryptoKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign']);
}

/** Written beside, then renamed: a crash never leaves half a certificate for the next start. */
export function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
}

function serial(): string {
  // Positive (high bit clear) 16 bytes, as RFC 5280 asks.
  const b = randomBytes(16);
  b[0] &= 0x7f;
  return b.toString('hex');
}

export function fingerprintOf(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}

/**
 * The box's own certificate authority and the server certificate it issues (issue 39). The CA's
 * private key never leaves the data folder unsealed (AES-256-GCM with the box's key,
 * src/system/secret-box.ts), so a copy of the data folder without that key cannot mint
 * certificates a till trusts. Keys are ECDSA P-256 made with WebCrypto; certificates are written by
 * @peculiar/x509.
 */
export class BoxPki {
  readonly files: ReturnType<typeof tlsFiles>;

  constructor(
    private readonly config: Pick<Config, 'data_dir' | 'http' | 'tls'>,
    private readonly box: SecretBox,
    private readonly now: () => number,
  ) {
    this.files = tlsFiles(config);
  }

  /** The CA, made on first use. */
  async ensureCa(): Promise<CaInfo> {
    const f = this.files;
    if (!existsSync(f.caCert) || !existsSync(f.caKey)) {
      mkdirSync(f.dir, { recursive: true, mode: 0o700 });
      const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
      const at = this.now();
      const cert = await x509.X509CertificateGenerator.createSelfSigned({
        serialNumber: serial(),
        name: `CN=posd box CA ${hostname()} ${new Date(at).toISOString().slice(0, 10)}`,
        notBefore: new Date(at - DAY),
        notAfter: new Date(at + CA_VALIDITY_DAYS * DAY),
        signingAlgorithm: ALG,
        keys: keys as unknown as CryptoKeyPair,
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
          await x509.SubjectKeyIdentifierExtension.create(keys.publicKey as unknown as CryptoKey),
        ],
      });
      writeAtomic(f.caKey, `${this.box.seal(keyPem(keys.privateKey))}\n`);
      writeAtomic(f.caCert, cert.toString('pem'));
    }
    const pem = readFileSync(f.caCert, 'utf8');
    return { file: f.caCert, fingerprint: fingerprintOf(pem), pem };
  }

  /** The server certificate on disk, if any, with its expiry and names. */
  current(): ServerMaterial | undefined {
    const f = this.files;
    if (!existsSync(f.cert) || !existsSync(f.key)) return undefined;
    const cert = readFileSync(f.cert, 'utf8');
    const parsed = new X509Certificate(cert);
    const names = (parsed.subjectAltName ?? '')
      .split(', ')
      .map((s) => s.replace(/^(DNS|IP Address):/, '').toLowerCase())
      .filter(Boolean);
    return { cert, key: this.box.open(readFileSync(f.key, 'utf8').trim()), notAfter: Date.parse(parsed.validTo), names };
  }

  /** Why the certificate on disk must be replaced now, or undefined when it is good. */
  renewalReason(material: ServerMaterial | undefined, names = boxNames(this.config)): string | undefined {
    if (!material) return 'none yet';
    if (material.notAfter - this.now() < this.config.tls.renew_before_days * DAY) return 'expires soon';
    const covered = new Set(material.names.map(normalise));
    const missing = names.filter((n) => !covered.has(normalise(n)));
    if (missing.length > 0) return `new names: ${missing.join(', ')}`;
    return undefined;
  }

  /** The server certificate, issued (again) when missing, near its expiry or short of a name. */
  async ensureServer(): Promise<{ material: ServerMaterial; issued?: string }> {
    await this.ensureCa();
    const names = boxNames(this.config);
    const material = this.current();
    const reason = this.renewalReason(material, names);
    if (!reason && material) return { material };
    return { material: await this.issue(names), issued: reason };
  }

  private async issue(names: string[]): Promise<ServerMaterial> {
    const f = this.files;
    const { chain, key, notAfter } = await this.issueFor(names, this.config.tls.cert_validity_days, hostname());
    writeAtomic(f.key, `${this.box.seal(key)}\n`);
    writeAtomic(f.cert, chain);
    return { cert: chain, key, notAfter, names };
  }

  /**
   * A server certificate for `names` signed by this CA, not kept here: the box's own (above), or one
   * `posd tls issue` hands to what serves the chain beside the core (HAProxy, fronts, a standby).
   */
  async issueFor(names: string[], days: number, commonName = names[0]): Promise<IssuedCertificate> {
    await this.ensureCa();
    const f = this.files;
    const caCert = new x509.X509Certificate(readFileSync(f.caCert, 'utf8'));
    const caKey = await importKey(this.box.open(readFileSync(f.caKey, 'utf8').trim()));
    const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
    const at = this.now();
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${commonName}`,
      issuer: caCert.subject,
      notBefore: new Date(at - DAY),
      notAfter: new Date(at + days * DAY),
      signingAlgorithm: ALG,
      publicKey: keys.publicKey as unknown as CryptoKey,
      signingKey: caKey as unknown as CryptoKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension(names.map((n) => (isIP(n) ? { type: 'ip' as const, value: n } : { type: 'dns' as const, value: n }))),
        await x509.AuthorityKeyIdentifierExtension.create(caCert),
      ],
    });
    // The chain (server, then CA) so a client that pins only the CA still builds the path.
    const chain = `${cert.toString('pem')}\n${caCert.toString('pem')}\n`;
    // Node writes the notAfter it read back (second precision); the parsed one is what renewal compares.
    return { chain, key: keyPem(keys.privateKey), notAfter: Date.parse(new X509Certificate(chain).validTo) };
  }
}

/** `::1` and `0:0:0:0:0:0:0:1` are one address; Node prints IPv6 SANs expanded in upper case. */
function normalise(name: string): string {
  if (isIP(name) !== 6) return name.toLowerCase();
  try {
    return new URL(`http://[${name}]/`).hostname;
  } catch {
    return name.toLowerCase();
  }
}
