import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DeliveryIds } from '../../src/modules/webhooks/delivery-ids.js';

describe('derived delivery ids', () => {
  it('have the shape of gaps.md and map back to their seq', () => {
    const ids = new DeliveryIds(randomBytes(32));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (seq) => {
        const id = ids.of(seq);
        expect(id).toMatch(/^whd_[0-9a-z]{16}$/);
        expect(ids.seqOf(id)).toBe(seq);
      }),
    );
  });

  it('differ per key and for neighbouring seqs, and refuse what is not their shape', () => {
    const a = new DeliveryIds(randomBytes(32));
    const b = new DeliveryIds(randomBytes(32));
    const made = new Set(Array.from({ length: 2000 }, (_, i) => a.of(i + 1)));
    expect(made.size).toBe(2000);
    expect(a.of(1)).not.toBe(b.of(1));
    // Neighbours share no prefix to speak of (not a counter in disguise).
    expect(a.of(1).slice(0, 8)).not.toBe(a.of(2).slice(0, 8));
    for (const bad of ['whd_short', 'ep_0123456789abcdef', 'whd_0123456789ABCDEF', 'whd_0123456789abcdef0']) expect(a.seqOf(bad)).toBeUndefined();
  });
});
