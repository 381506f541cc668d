import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  randomBytes,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { ownerOnlyFiles } from '../file-modes.js';

/**
 * The recovery key pair that backups are sealed to (docs/operations.md, "Complete backups"): X25519.
 * The box keeps only the public half (`recovery-key.pub` in the data folder); the private half is
 * shown once, when the pair is made, for the manager to write down, and is asked for by `posd
 * restore`. A backup's secrets are sealed to the public half with an ephemeral key (ECDH, HKDF-SHA256,
 * AES-256-GCM: a sealed box from node:crypto), so nothing on the box, nor the backup itself, opens them.
 */

const PKCS8_X25519 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const SPKI_X25519 = Buffer.from('302a300506032b656e032100', 'hex');
const INFO = 'posd backup recovery v1';
/** Crockford's base32: no I, L, O or U, so a key copied by hand is read back as written. */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const PREFIX = 'POSD-RK1';

export class RecoveryKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecoveryKeyError';
  }
}

export class WrongRecoveryKeyError extends Error {
  constructor(expected: string, given: string) {
    super(`the recovery key given (${given}) is not the one this backup was sealed to (${expected})`);
    this.name = 'WrongRecoveryKeyError';
  }
}

export function recoveryPublicFile(config: Pick<Config, 'data_dir'>): string {
  return join(config.data_dir, 'recovery-key.pub');
}

function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

function unbase32(text: string): Buffer {
  const bytes: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of text) {
    const i = ALPHABET.indexOf(ch);
    if (i < 0) throw new RecoveryKeyError(`a recovery key holds no '${ch}'`);
    value = ((value << 5) | i) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bytes.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(bytes);
}

const checksum = (raw: Buffer) => createHash('sha256').update(raw).digest().subarray(0, 2);

/** The private half in the words written down: `POSD-RK1-XXXXX-...` (32 bytes and a 2-byte checksum). */
function formatPrivate(raw: Buffer): string {
  const groups = base32(Buffer.concat([raw, checksum(raw)])).match(/.{1,5}/g) ?? [];
  return [PREFIX, ...groups].join('-');
}

/** The raw private half from what was written down; case, spaces, dashes and O/I/L read as 0/1/1. */
export function parseRecoveryKey(text: string): Buffer {
  const compact = text.toUpperCase().replace(/[\s-]/g, '');
  const prefix = /^P[O0]SDRK[1IL]/.exec(compact);
  if (!prefix) throw new RecoveryKeyError(`a recovery key starts with ${PREFIX}-`);
  const s = compact.slice(prefix[0].length).replace(/O/g, '0').replace(/[IL]/g, '1');
  const bytes = unbase32(s);
  if (bytes.length < 34) throw new RecoveryKeyError('the recovery key is too short: a character is missing');
  const raw = bytes.subarray(0, 32);
  if (!bytes.subarray(32, 34).equals(checksum(raw))) throw new RecoveryKeyError('the recovery key does not check out: a character is mistyped');
  return Buffer.from(raw);
}

const privateKeyOf = (raw: Buffer): KeyObject => createPrivateKey({ key: Buffer.concat([PKCS8_X25519, raw]), format: 'der', type: 'pkcs8' });
const publicKeyOf = (raw: Buffer): KeyObject => createPublicKey({ key: Buffer.concat([SPKI_X25519, raw]), format: 'der', type: 'spki' });
const rawPublic = (key: KeyObject): Buffer => key.export({ format: 'der', type: 'spki' }).subarray(SPKI_X25519.length);

/** A short, non-secret name of a public half: backups and `posd doctor` name the key with it. */
export function recoveryKeyId(publicRaw: Buffer): string {
  return `rk-${createHash('sha256').update(publicRaw).digest('hex').slice(0, 12)}`;
}

/** The public half of a written-down private half. */
export function publicOfRecoveryKey(text: string): Buffer {
  return rawPublic(createPublicKey(privateKeyOf(parseRecoveryKey(text))));
}

export interface RecoveryPair {
  /** The private half as written down: shown once, never stored. */
  recoveryKey: string;
  publicRaw: Buffer;
  id: string;
}

export function makeRecoveryPair(): RecoveryPair {
  const { privateKey, publicKey } = generateKeyPairSync('x25519');
  const raw = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_X25519.length);
  const publicRaw = rawPublic(publicKey);
  return { recoveryKey: formatPrivate(Buffer.from(raw)), publicRaw, id: recoveryKeyId(publicRaw) };
}

/** The public half this box seals its backups to; undefined when it has none (an upgraded box). */
export function readRecoveryPublic(config: Pick<Config, 'data_dir'>): { raw: Buffer; id: string } | undefined {
  const file = recoveryPublicFile(config);
  if (!existsSync(file)) return undefined;
  const raw = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (raw.length !== 32) throw new RecoveryKeyError(`${file} is not a recovery public key (base64 of 32 bytes)`);
  return { raw, id: recoveryKeyId(raw) };
}

/** Keeps a public half in the data folder (replacing the one there, atomically). */
export function writeRecoveryPublic(config: Pick<Config, 'data_dir'>, publicRaw: Buffer): void {
  const file = recoveryPublicFile(config);
  const staging = `${file}.new`;
  writeFileSync(staging, `${publicRaw.toString('base64')}\n`, { mode: 0o600 });
  ownerOnlyFiles(staging);
  renameSync(staging, file);
}

/** Makes a pair, keeps its public half, returns the private half to show once. */
export function newRecoveryPair(config: Pick<Config, 'data_dir'>): RecoveryPair {
  const pair = makeRecoveryPair();
  writeRecoveryPublic(config, pair.publicRaw);
  return pair;
}

interface SealedToKey {
  v: 1;
  alg: 'x25519-hkdf-sha256-aes-256-gcm';
  key_id: string;
  epk: string;
  iv: string;
  tag: string;
  data: string;
}

function derive(shared: Buffer, epk: Buffer, recipient: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, Buffer.concat([epk, recipient]), INFO, 32));
}

/** `plain` sealed to a public half: only its private half opens it. JSON text. */
export function sealToRecoveryKey(plain: string, publicRaw: Buffer): string {
  const eph = generateKeyPairSync('x25519');
  const epk = rawPublic(eph.publicKey);
  const key = derive(diffieHellman({ privateKey: eph.privateKey, publicKey: publicKeyOf(publicRaw) }), epk, publicRaw);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  const sealed: SealedToKey = {
    v: 1,
    alg: 'x25519-hkdf-sha256-aes-256-gcm',
    key_id: recoveryKeyId(publicRaw),
    epk: epk.toString('base64'),
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    data: data.toString('base64'),
  };
  return JSON.stringify(sealed);
}

/** The id of the key a sealed text needs. */
export function sealedKeyId(sealed: string): string {
  return (JSON.parse(sealed) as SealedToKey).key_id;
}

/** Opens what `sealToRecoveryKey` sealed; throws WrongRecoveryKeyError for another key. */
export function openWithRecoveryKey(sealed: string, recoveryKey: string): string {
  const s = JSON.parse(sealed) as SealedToKey;
  if (s.v !== 1) throw new RecoveryKeyError(`sealed contents of version ${s.v} are newer than this posd understands`);
  const raw = parseRecoveryKey(recoveryKey);
  const privateKey = privateKeyOf(raw);
  const recipient = rawPublic(createPublicKey(privateKey));
  const given = recoveryKeyId(recipient);
  if (given !== s.key_id) throw new WrongRecoveryKeyError(s.key_id, given);
  const epk = Buffer.from(s.epk, 'base64');
  const key = derive(diffieHellman({ privateKey, publicKey: publicKeyOf(epk) }), epk, recipient);
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(s.iv, 'base64'));
  decipher.setAuthTag(Buffer.from(s.tag, 'base64'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(s.data, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new RecoveryKeyError('the sealed contents of this backup are damaged: the recovery key matches but they do not open');
  }
}
