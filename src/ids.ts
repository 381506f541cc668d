import { randomFillSync } from 'node:crypto';

// One call into the CSPRNG per 4 KB instead of one per id: ids are made several times per sale.
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function randomByte(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++];
}

function randomString(alphabet: string, length: number): string {
  // Reject bytes past the largest multiple of the alphabet size so every character is equally likely.
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b < limit) out += alphabet[b % alphabet.length];
  }
  return out;
}

/**
 * `<prefix>_` + 16 random base36 characters (about 82 bits). Stores create ids while offline and
 * many stores sync into one central, so ids come from randomness, never from a counter.
 */
export function newId(prefix: string): string {
  return `${prefix}_${randomString('0123456789abcdefghijklmnopqrstuvwxyz', 16)}`;
}

/** A secret token of base62 characters (keys, pairing tokens). */
export function randomToken(length = 32): string {
  return randomString('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', length);
}
