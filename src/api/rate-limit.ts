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
