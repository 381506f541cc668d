import { createHmac } from 'node:crypto';

// Each half of the 16 characters: 8 base36 digits, 36^8 (about 2^41.4) values, exact in a double.
const HALF = 36 ** 8;
const ROUNDS = 8;
const SHAPE = /^whd_[0-9a-z]{16}$/;

/**
 * A delivery's public id derived from its seq: `whd_` + 16 base36 characters (gaps.md's shape), a
 * keyed permutation of the seq (a Feistel network over two 8-character halves, rounds of
 * HMAC-SHA256 under a random key made with the database and kept in it). Nothing about it
 * is stored or indexed at fan-out, where a random-key index cost a page write per row; it cannot
 * collide (a permutation), reveals neither the order nor the count without the key, and maps back
 * to the row's seq. Deliveries never leave the database that made them (they are not synced), so
 * only uniqueness within it matters. Test sends keep a stored random id.
 */
export class DeliveryIds {
  constructor(private readonly key: Buffer) {}

  of(seq: number): string {
    let a = Math.floor(seq / HALF);
    let b = seq % HALF;
    for (let r = 0; r < ROUNDS; r++) [a, b] = [b, (a + this.round(r, b)) % HALF];
    return `whd_${half(a)}${half(b)}`;
  }

  /** The seq an id of this shape stands for, or undefined (not the shape, or past any seq). */
  seqOf(id: string): number | undefined {
    if (!SHAPE.test(id)) return undefined;
    let a = parseInt(id.slice(4, 12), 36);
    let b = parseInt(id.slice(12), 36);
    for (let r = ROUNDS - 1; r >= 0; r--) [a, b] = [(b - this.round(r, a) + HALF) % HALF, a];
    const seq = a * HALF + b;
    return Number.isSafeInteger(seq) && seq > 0 ? seq : undefined;
  }

  private round(r: number, x: number): number {
    return createHmac('sha256', this.key).update(`${r}:${x}`).digest().readUIntBE(0, 6) % HALF;
  }
}

function half(n: number): string {
  return n.toString(36).padStart(8, '0');
}
