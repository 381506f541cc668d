import { argon2, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * A manager's password. New ones are argon2id from node:crypto (Node 24.7 and later), stored as
 * `argon2id$v=19$m=19456,t=2,p=1$salt$hash` (base64): OWASP's first argon2id setting, memory-hard
 * so a stolen database costs a guesser 19 MiB per try (docs/decisions/0180-named-managers.md has
 * the figures). Passwords set before are `scrypt$N$r$p$salt$hash` and still verify (the single
 * status-page password a box adopts as its first manager), and are rehashed at the next login.
 */
const ARGON = { memory: 19_456, passes: 2, parallelism: 1, tagLength: 32 };

function deriveArgon(password: string, nonce: Buffer, p: { memory: number; passes: number; parallelism: number; tagLength: number }): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    argon2('argon2id', { message: password.normalize('NFC'), nonce, ...p }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

function deriveScrypt(password: string, salt: Buffer, opts: ScryptOptions, keylen: number): Promise<Buffer> {
  const n = opts.N ?? 1 << 15;
  const r = opts.r ?? 8;
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, keylen, { ...opts, maxmem: 256 * n * r }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export const MIN_PASSWORD_LENGTH = 10;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await deriveArgon(password, salt, ARGON);
  const params = `m=${ARGON.memory},t=${ARGON.passes},p=${ARGON.parallelism}`;
  return ['argon2id', 'v=19', params, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Whether a stored hash is weaker than what hashPassword makes now (an adopted scrypt one). */
export function needsRehash(stored: string): boolean {
  return !stored.startsWith(`argon2id$v=19$m=${ARGON.memory},t=${ARGON.passes},p=${ARGON.parallelism}$`);
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  let key: Buffer;
  let expected: Buffer;
  if (parts.length === 5 && parts[0] === 'argon2id') {
    const m = /^m=(\d+),t=(\d+),p=(\d+)$/.exec(parts[2]);
    if (!m) return false;
    expected = Buffer.from(parts[4], 'base64');
    key = await deriveArgon(password, Buffer.from(parts[3], 'base64'), {
      memory: Number(m[1]),
      passes: Number(m[2]),
      parallelism: Number(m[3]),
      tagLength: expected.length,
    });
  } else if (parts.length === 6 && parts[0] === 'scrypt') {
    const [n, r, p] = parts.slice(1, 4).map(Number);
    expected = Buffer.from(parts[5], 'base64');
    key = await deriveScrypt(password, Buffer.from(parts[4], 'base64'), { N: n, r, p }, expected.length);
  } else return false;
  return key.length === expected.length && timingSafeEqual(key, expected);
}
