import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
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

/**
 * Failed logins per key (an address, or a known device) in fixed windows of WINDOW_MS: past `limit`
 * the key is answered 429 unchecked until its window ends. Only failures count, so a manager who
 * logs in often is never slowed. Memory is bounded by the keys that failed in the current window.
 */
export class FailureLimit {
  private readonly counts = new Map<string, { window: number; count: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly limit: number,
  ) {}

  /** Seconds `key` must wait before its next login is checked (0: check it). */
  wait(key: string): number {
    const now = this.clock.now();
    const window = Math.floor(now / WINDOW_MS);
    const entry = this.counts.get(key);
    if (!entry || entry.window !== window || entry.count < this.limit) return 0;
    return Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000));
  }

  failed(key: string): void {
    const window = Math.floor(this.clock.now() / WINDOW_MS);
    const entry = this.counts.get(key);
    if (entry && entry.window === window) entry.count++;
    else {
      if (this.counts.size > 10_000) for (const [k, e] of this.counts) if (e.window < window) this.counts.delete(k);
      this.counts.set(key, { window, count: 1 });
    }
  }
}

/**
 * At most `concurrency` password checks at once, the rest in a line of at most `queue`. A guess
 * flood used to start one scrypt per request (600 at once) until requests timed out unanswered;
 * now a login past the line is answered 429 at once. A known device or the box's own network
 * (`priority`) goes to the front of the line and is never turned away by it: the flood cannot keep
 * the manager out.
 */
export class PasswordChecks {
  private running = 0;
  private readonly line: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    private readonly queue: number,
  ) {}

  /** `check`'s answer, or null when the line is full (the caller answers 429). */
  async run<T>(check: () => Promise<T>, priority: boolean): Promise<T | null> {
    if (this.running >= this.concurrency) {
      if (!priority && this.line.length >= this.queue) return null;
      // The slot is handed over by the check that ends (running stays counted).
      await new Promise<void>((resolve) => (priority ? this.line.unshift(resolve) : this.line.push(resolve)));
    } else this.running++;
    try {
      return await check();
    } finally {
      const next = this.line.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/** The cookie a browser gets at each successful login: it names a device that knew the password. */
export const DEVICE_COOKIE = 'posd_device';
export const DEVICE_COOKIE_DAYS = 180;

const sign = (secret: string, id: string) => createHmac('sha256', secret).update(`posd-device:${id}`).digest('base64url');

/**
 * A new device token, `id.mac`, signed with the stored password hash: nothing is stored, and a
 * changed password forgets every device (as it ends every session).
 */
export function newDeviceToken(secret: string): string {
  const id = randomBytes(16).toString('base64url');
  return `${id}.${sign(secret, id)}`;
}

/** The device id when `value` is a token this password signed, else null. */
export function knownDevice(secret: string | null, value: string | undefined): string | null {
  if (!secret || !value) return null;
  const dot = value.indexOf('.');
  if (dot <= 0) return null;
  const id = value.slice(0, dot);
  const mac = Buffer.from(value.slice(dot + 1));
  const expected = Buffer.from(sign(secret, id));
  return mac.length === expected.length && timingSafeEqual(mac, expected) ? id : null;
}
