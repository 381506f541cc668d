import { realClock, type Clock } from '../devices/clock.js';

/**
 * Time is injected everywhere so that timeouts and schedules are tested without sleeping. One shape
 * for the whole program, the one devices/ already drives its resends and pings with (devices/ may
 * not import src/, so src/ takes its type from there).
 */
export type { Clock, TimerHandle } from '../devices/clock.js';

/** Wall time, and timers that do not keep a finished process alive. */
export const systemClock: Clock = realClock();

/** The last instant formatted: a write formats its one `now` for each row and event it makes. */
let lastMs = Number.NaN;
let lastIso = '';

/** `ms` as an ISO 8601 UTC timestamp; the same instant as the last call is not formatted again (0246). */
export function isoTime(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
