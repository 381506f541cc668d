import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { LookTimer } from '../../src/modules/webhooks/look-timer.js';
import { until } from '../helpers/until.js';

// The worker's look at the table (decision 0296): the periodic look asked again at every pass
// stands once armed; any other look replaces the armed one.
describe('the delivery worker look timer', () => {
  it('keeps a periodic look armed when asked for it again, so it fires one delay after it was first armed', async () => {
    const fired: number[] = [];
    const t = new LookTimer(() => fired.push(performance.now()));
    const t0 = performance.now();
    t.arm(300, true);
    // Asked again and again while it waits (each pass): re-armed, it would fire 300 ms after the last.
    const again = setInterval(() => t.arm(300, true), 20);
    try {
      await until('the look fired', () => fired.length === 1 || undefined, 5_000, 5);
    } finally {
      clearInterval(again);
    }
    expect(fired[0] - t0).toBeGreaterThanOrEqual(299);
    expect(fired[0] - t0).toBeLessThan(600);
    t.clear();
  });

  it('replaces the armed look by a sooner one, and a look that is not periodic by a later one', async () => {
    const fired: string[] = [];
    const t = new LookTimer(() => fired.push('fired'));
    t.arm(60_000, true);
    t.arm(10);
    await until('the sooner look fired', () => fired.length === 1 || undefined);
    // Armed for now (a retry due), then asked for a later one (that row was sent since): replaced.
    t.arm(0);
    t.arm(60_000);
    expect(t.armedWithin(1_000)).toBe(false);
    expect(t.armedWithin(61_000)).toBe(true);
    // A periodic look asked while a later non-periodic one is armed: the sooner periodic one wins.
    t.arm(30_000, true);
    expect(t.armedWithin(31_000)).toBe(true);
    t.clear();
    expect(t.armedWithin(1_000_000)).toBe(false);
  });
});
