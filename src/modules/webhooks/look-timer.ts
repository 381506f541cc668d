import { performance } from 'node:perf_hooks';

/**
 * The delivery worker's one timer for its next look at the table (worker.ts), armed after each
 * pass. A look already armed stands when it fires no later than the one asked for and not much
 * sooner (by at most half the delay asked): while deliveries stream, each pass asked for the same
 * look (the poll, or the recheck past a capped backlog) again, and re-arming it cost a
 * `clearTimeout` and a `setTimeout` at every pass, about two a delivery. A look that stands fires
 * early by at most half its delay, a pass that finds nothing new (decision 0296). One armed much
 * sooner (a row that was due, since sent) is replaced, as before.
 */
export class LookTimer {
  private timer: NodeJS.Timeout | undefined;
  /** When the armed look fires (`performance.now()` ms); Infinity when none is armed. */
  private at = Number.POSITIVE_INFINITY;

  constructor(private readonly fire: () => void) {}

  /** Whether a look is armed to fire within `ms` from now: no look asked for now can be sooner. */
  armedWithin(ms: number): boolean {
    return this.at <= performance.now() + ms;
  }

  /** A look in `delay` ms, unless one is armed for then or up to `delay / 2` sooner. */
  arm(delay: number): void {
    const at = performance.now() + delay;
    if (this.at <= at && at - this.at <= delay / 2) return;
    clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.at = Number.POSITIVE_INFINITY;
      this.fire();
    }, delay);
    this.timer.unref();
  }

  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.at = Number.POSITIVE_INFINITY;
  }
}
