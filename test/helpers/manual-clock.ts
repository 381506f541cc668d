import { ManualClock as DeviceManualClock } from '../../devices/clock.js';

/**
 * The devices/ clock tests move by hand (its timers fire inside `advance`), starting on a fixed
 * business day so dates in assertions do not depend on when the suite runs.
 */
export class ManualClock extends DeviceManualClock {
  constructor(start = Date.parse('2026-01-01T00:00:00.000Z')) {
    super(start);
  }

  /** Jumps to `ms`; timers falling due on the way fire, and a jump back fires none. */
  set(ms: number): void {
    this.advance(ms - this.now());
  }
}
