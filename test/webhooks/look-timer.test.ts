import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { LookTimer } from '../../src/modules/webhooks/look-timer.js';
import { until } from '../helpers/until.js';

// The worker's look at the table (decision 0296): asked again after every pass, it is re-armed only
// when the new one is sooner, or much later than the one armed.
describe('the delivery worker look timer', () => {
  it('keeps the look armed when asked for about the same one, and fires it once', async () => {
    const fired: number[] = [];
    const t = new LookTimer(() => fired.push(performance.now()));
    const t0 = performance.now();
    t.arm(300);
    // Asked again a little later for the same delay: the armed one stands (it fires under 300 ms from now).
    await new Promise((r) => setImmediate(r));
    t.arm(300);
    expect(t.armedWithin(300)).toBe(true);
    await until('the look fired', () => fired.length === 1 || undefined);
    expect(fired[0] - t0).toBeGreaterThanOrEqual(299);
    expect(t.armedWithin(1_000_000)).toBe(false);
    t.clear();
  });

  it('replaces the armed look by a sooner one, and by one much later', async () => {
    const fired: string[] = [];
    let name = '';
    const t = new LookTimer(() => fired.push(name));
    name = 'soon';
    t.arm(60_000);
    t.arm(10);
    await until('the sooner look fired', () => fired.length === 1 || undefined);
    expect(fired).toEqual(['soon']);
    // Armed for now, then asked for a look much later: the one for now is not kept.
    t.arm(0);
    t.arm(60_000);
    expect(t.armedWithin(1_000)).toBe(false);
    expect(t.armedWithin(61_000)).toBe(true);
    t.clear();
    expect(t.armedWithin(1_000_000)).toBe(false);
  });
});
