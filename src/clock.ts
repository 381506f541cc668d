import { realClock, type Clock } from '../devices/clock.js';

/**
 * Time is injected everywhere so that timeouts and schedules are tested without sleeping. One shape
 * for the whole program, the one devices/ already drives its resends and pings with (devices/ may
 * not import src/, so src/ takes its type from there).
 */
export type { Clock, TimerHandle } from '../devices/clock.js';

/** Wall time, and timers that do not keep a finished process alive. */
export const systemClock: Clock = realClock();

export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}
