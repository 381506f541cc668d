import { performance } from 'node:perf_hooks';

/**
 * The delivery worker's one timer for its next look at the table (worker.ts), armed after each
 * pass. While every slot is busy each pass asks for the same periodic look (`webhooks.poll_ms`),
 * and re-arming it cost a `clearTimeout` and a `setTimeout` at every pass: a periodic look already
 * armed, no later than the one asked for, stands (it fires at most one poll after it was armed,
 * where re-arming it at every pass kept it from firing while deliveries streamed). Any other look
 * (the next retry, the recheck past a capped backlog, decision 0264) replaces the armed one, as
 * before (decision 0296).
 */
export class LookTimer {
  private timer: NodeJS.Timeout | undefined;
  /** When the armed look fires (`performance.now()` ms); Infinity when none is armed. */
  private at = Number.POSITIVE_INFINITY;
  /** Whether the armed look is the periodic one. */
  private periodic = false;

  constructor(private readonly fire: () => void) {}

  /** Whether a look is armed to fire within `ms` from now: no look asked for now can be sooner. */
  armedWithin(ms: number): boolean {
    return this.at <= performance.now() + ms;
  }

  /** A look in `delay` ms; `periodic`: the poll, which one armed no later satisfies. */
  arm(delay: number, periodic = false): void {
    const at = performance.now() + delay;
    if (periodic && this.periodic && this.at <= at) return;
    clearTimeout(this.timer);
    this.at = at;
    this.periodic = periodic;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.at = Number.POSITIVE_INFINITY;
      this.periodic = false;
      this.fire();
    }, delay);
    this.timer.unref();
  }

  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.at = Number.POSITIVE_INFINITY;
    this.periodic = false;
  }
}
