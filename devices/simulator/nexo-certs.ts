/**
 * A demo CA and a terminal certificate for the nexo simulator's command line (nexo-cli.ts): the
 * certificate is named as Adyen names its terminals (`<poiid>.test.terminal.adyen.com`, the POIID
 * first), so posd's check of a terminal's identity (devices/nexo/client.ts) holds as with a real one.
 * Made once in a folder and reused, so posd keeps trusting the same CA across runs.
 */
import { KeyObject, randomBytes, webcrypto } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
// tsyringe, inside @peculiar/x509, needs the Reflect metadata API before the library loads.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;

export interface DemoCertificates {
  /** The CA's PEM file: what posd's `terminals.nexo_ca_file` names. */
  caFile: string;
  key: string;
  cert: string;
  /** Whether they were made now (false: found in the folder). */
  created: boolean;
}

function serial(): string {
  const b = randomBytes(16);
  b[0] &= 0x7f;
  return b.toString('hex');
}

function keyPem(key: webcrypto.CryptoKey): string {
  return KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }) as string;
}

export async function demoCertificates(dir: string, poiid: string): Promise<DemoCertificates> {
  const files = { ca: join(dir, 'ca.pem'), cert: join(dir, 'terminal.pem'), key: join(dir, 'terminal.key') };
  const name = `${poiid.toLowerCase()}.test.terminal.adyen.com`;
  const have = existsSync(files.ca) && existsSync(files.cert) && existsSync(files.key);
  // Made for another POIID: the terminal would not pass posd's identity check.
  if (have && new x509.X509Certificate(readFileSync(files.cert, 'utf8')).subject === `CN=${name}`) {
    return { caFile: files.ca, key: readFileSync(files.key, 'utf8'), cert: readFileSync(files.cert, 'utf8'), created: false };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const now = Date.now();
  const caKeys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: 'CN=posd nexo simulator demo CA',
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 3650 * DAY),
    signingAlgorithm: ALG,
    keys: caKeys as unknown as CryptoKeyPair,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey as unknown as CryptoKey),
    ],
  });
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${name}`,
    issuer: ca.subject,
    notBefore: new Date(now - DAY),
    notAfter: new Date(now + 3650 * DAY),
    signingAlgorithm: ALG,
    publicKey: keys.publicKey as unknown as CryptoKey,
    signingKey: caKeys.privateKey as unknown as CryptoKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: name }]),
      await x509.AuthorityKeyIdentifierExtension.create(ca),
    ],
  });
  const key = keyPem(keys.privateKey);
  const chain = `${cert.toString('pem')}\n${ca.toString('pem')}\n`;
  // The CA's private key is not kept: a demo CA issues one certificate, now.
  writeFileSync(files.key, key, { mode: 0o600 });
  writeFileSync(files.cert, chain);
  writeFileSync(files.ca, ca.toString('pem'));
  return { caFile: files.ca, key, cert: chain, created: true };
}
