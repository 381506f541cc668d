import type { Clock } from '../../clock.js';

/** Failed manager logins from all addresses outside the box's network, in one window, before a lock. */
const FAILURES = 20;
const WINDOW_MS = 5 * 60_000;
/** The first lock; each lock within a quiet window of the last one's end doubles it, up to MAX. */
const FIRST_LOCK_MS = 60_000;
const MAX_LOCK_MS = 60 * 60_000;

/**
 * The manager password's global attempt limit (issue 17, hole 10), beside the per-address one:
 * 600 guesses from 60 addresses were all checked. After FAILURES failed logins in WINDOW_MS, logins
 * from outside the box's own network are refused unchecked for a lock that doubles each time it
 * comes back (1 min, 2 min, ... 1 h) and falls back to 1 min after a quiet window. The box's own
 * network (its LAN, loopback) is never locked out by it: the manager at the counter still gets in
 * under an attack from elsewhere, bounded there by the per-address limit alone.
 */
export class LoginBackoff {
  private failures: number[] = [];
  private lockedUntil = 0;
  private lockMs = FIRST_LOCK_MS;

  constructor(private readonly clock: Clock) {}

  /** Seconds an outside address must wait before its login is checked (0: check it). */
  wait(): number {
    const now = this.clock.now();
    return now < this.lockedUntil ? Math.ceil((this.lockedUntil - now) / 1000) : 0;
  }

  failed(): void {
    const now = this.clock.now();
    this.failures = this.failures.filter((t) => now - t < WINDOW_MS);
    this.failures.push(now);
    if (this.failures.length < FAILURES || now < this.lockedUntil) return;
    // A quiet window since the last lock ended: the attack is a new one, start small again.
    if (this.lockedUntil && now - this.lockedUntil > WINDOW_MS) this.lockMs = FIRST_LOCK_MS;
    else if (this.lockedUntil) this.lockMs = Math.min(this.lockMs * 2, MAX_LOCK_MS);
    this.lockedUntil = now + this.lockMs;
    this.failures = [];
  }
}
