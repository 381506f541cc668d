import type { Clock } from '../clock.js';

/**
 * Fixed windows counted in memory. Limits protect this process only, so a restart forgetting the
 * counts is fine. Old windows are swept as new ones open, keeping memory bounded by active callers.
 */
export class WindowLimiter {
  private readonly counts = new Map<string, { window: number; count: number }>();
  private lastSweep = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
  ) {}

  /** Counts one hit; returns the seconds to wait when over the limit, else 0. */
  hit(key: string): number {
    const now = this.clock.now();
    const window = Math.floor(now / this.windowMs);
    if (window !== this.lastSweep) this.sweep(window);
    const entry = this.counts.get(key);
    if (!entry || entry.window !== window) {
      this.counts.set(key, { window, count: 1 });
      return 0;
    }
    entry.count += 1;
    if (entry.count <= this.limit) return 0;
    return Math.max(1, Math.ceil(((window + 1) * this.windowMs - now) / 1000));
  }

  private sweep(window: number): void {
    this.lastSweep = window;
    for (const [key, entry] of this.counts) if (entry.window < window) this.counts.delete(key);
  }
}

/**
 * At most `limit` hits in any rolling `windowMs` (spec 8: 60 per second per key). A fixed window
 * lets nearly twice the limit through across a boundary (60 at x.99 s, 60 more at (x+1).01 s), so
 * each key keeps the times of its hits in the last window. Refused hits are not recorded: a caller
 * that slows down gets through as soon as its oldest hit leaves the window.
 */
export class RollingLimiter {
  private readonly hits = new Map<string, { times: number[]; start: number }>();
  private lastSweep = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
  ) {}

  /** Counts one hit; returns the seconds to wait when over the limit, else 0. */
  hit(key: string): number {
    const now = this.clock.now();
    if (now - this.lastSweep >= this.windowMs) this.sweep(now);
    let entry = this.hits.get(key);
    if (!entry) this.hits.set(key, (entry = { times: [], start: 0 }));
    const { times } = entry;
    while (entry.start < times.length && times[entry.start]! <= now - this.windowMs) entry.start++;
    if (entry.start > 1024 && entry.start * 2 > times.length) {
      times.splice(0, entry.start);
      entry.start = 0;
    }
    if (times.length - entry.start >= this.limit) {
      return Math.max(1, Math.ceil((times[entry.start]! + this.windowMs - now) / 1000));
    }
    times.push(now);
    return 0;
  }

  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [key, e] of this.hits) if (e.times.length === 0 || e.times[e.times.length - 1]! <= now - this.windowMs) this.hits.delete(key);
  }
}
