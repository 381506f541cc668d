import { describe, expect, it } from 'vitest';
import { EndpointGates } from '../../src/modules/webhooks/gates.js';

// `rate_limit` is a ceiling over every 1-second window (issue 35), not a bucket that starts full.
function maxInAnyWindow(times: number[]): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i] - times[j] >= 1000) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/** Drives the gates as dispatch does: due rows are offered; a held one comes back at the time given. */
function run(limit: number, arrivals: number[], step: (t: number) => number): number[] {
  const gates = new EndpointGates({ breakerFailures: 0, breakerProbeMs: 30_000, slowMs: 0 });
  const due = [...arrivals];
  const sent: number[] = [];
  let now = 0;
  for (let guard = 0; due.length > 0 && guard < 100_000; guard++) {
    gates.newPass();
    due.sort((a, b) => a - b);
    for (let i = 0; i < due.length && due[i] <= now; ) {
      const at = gates.admit('ep', { rateLimit: limit, maxInFlight: null }, now);
      if (at === 0) {
        sent.push(now);
        gates.finished('ep', now, true, true, 1, now);
        due.splice(i, 1);
      } else {
        expect(at).toBeGreaterThan(now);
        due[i++] = at;
      }
    }
    now += step(now);
  }
  expect(due).toHaveLength(0);
  return sent;
}

describe('rate_limit over every 1-second window', () => {
  it('after a pause, a burst gets at most N in its first second (the bucket does not start full)', () => {
    const sent = run(
      5,
      Array.from({ length: 10 }, () => 5_000),
      () => 1,
    );
    expect(sent).toHaveLength(10);
    expect(maxInAnyWindow(sent)).toBe(5);
    expect(sent.filter((t) => t < 6_000)).toHaveLength(5);
  });

  it('no window exceeds N under bursts, a steady stream and pauses, with an uneven clock', () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (const limit of [1, 3, 10, 50]) {
      const arrivals = [
        ...Array.from({ length: limit * 4 }, () => 0),
        ...Array.from({ length: limit * 3 }, (_, i) => 2_000 + i * 37),
        ...Array.from({ length: limit * 2 }, () => 30_000),
      ];
      const sent = run(limit, arrivals, () => 1 + Math.floor(rand() * 40));
      expect(sent).toHaveLength(arrivals.length);
      expect(maxInAnyWindow(sent)).toBeLessThanOrEqual(limit);
      // A ceiling, not a trickle: a backlog is sent at the limit.
      expect(maxInAnyWindow(sent)).toBe(limit);
    }
  });
});
