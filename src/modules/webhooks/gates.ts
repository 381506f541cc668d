/**
 * Per-endpoint gates (docs/webhooks.md): a throttle (`rate_limit`, messages per second: a sliding
 * window, so no 1-second window ever holds more than that many), a cap on the endpoint's attempts
 * in flight (`max_in_flight`, or `webhooks.endpoint_max_in_flight` when the endpoint names none, so a
 * hung receiver never holds more than its share of the worker's slots) and a circuit breaker
 * (`webhooks.breaker_failures` failure signals in a row open it; after `webhooks.breaker_probe_ms`
 * one probe goes; its success closes it, its failure opens it again for twice as long, up to ten
 * minutes). A failure signal is an automatic attempt that failed or timed out, or one still in
 * flight after `webhooks.slow_ms`: a hung receiver is noticed long before its timeout. A delivery an
 * endpoint's gate holds back is not attempted: it is rescheduled (its `next_attempt_ms`) to when the
 * gate should let it through, so it leaves the due window and the other endpoints' deliveries take
 * the slots; one the cap holds back is first kept in memory, up to a bound (held.ts).
 */
export interface GateSettings {
  rateLimit: number | null;
  maxInFlight: number | null;
}

export interface GateConfig {
  /** Failure signals in a row that open the breaker; 0: no breaker. */
  breakerFailures: number;
  breakerProbeMs: number;
  /** An attempt in flight this long is a failure signal; 0: only outcomes count. */
  slowMs: number;
}

/** One admitted attempt still in flight: when it started, and whether it was already counted slow. */
interface Flight {
  at: number;
  slow: boolean;
}

interface State {
  /** Admission times of the last `rateLimit` admitted attempts, oldest first (the sliding window). */
  sent: number[];
  flights: Flight[];
  /** Rows held back in the current pass: each later one waits one more interval. */
  heldInPass: number;
  pass: number;
  fails: number;
  openUntil: number;
  probeMs: number;
  probing: boolean;
  /** Smoothed attempt duration (ms): when a slot of a capped endpoint is expected to free. */
  avgMs: number;
}

const MAX_PROBE_MS = 600_000;

export class EndpointGates {
  private readonly states = new Map<string, State>();
  private pass = 0;

  /** Whether the last `admit` held its row back by the in-flight cap (not the rate limit or breaker). */
  heldByCap = false;

  constructor(private readonly cfg: GateConfig) {}

  get breakerOn(): boolean {
    return this.cfg.breakerFailures > 0;
  }

  /** A new dispatch pass: the rows held back are counted again. */
  newPass(): void {
    this.pass++;
  }

  private state(id: string): State {
    let s = this.states.get(id);
    if (!s) {
      s = { sent: [], flights: [], heldInPass: 0, pass: -1, fails: 0, openUntil: 0, probeMs: this.cfg.breakerProbeMs, probing: false, avgMs: 100 };
      this.states.set(id, s);
    }
    if (s.pass !== this.pass) {
      s.pass = this.pass;
      s.heldInPass = 0;
    }
    return s;
  }

  /**
   * 0: send it now (counted as in flight until `finished` with the same `now`); otherwise the time
   * to reschedule it to. `ahead`: rows of the endpoint already waiting in memory before this one
   * (held.ts), which its cap sends first.
   */
  admit(id: string, g: GateSettings, now: number, ahead = 0): number {
    const s = this.state(id);
    this.heldByCap = false;
    this.countSlow(s, now);
    if (this.breakerOn && s.openUntil !== 0) {
      if (now < s.openUntil) return s.openUntil;
      // Half-open: one probe at a time.
      if (s.probing) return now + s.probeMs;
    }
    if (g.maxInFlight !== null && s.flights.length >= g.maxInFlight) {
      s.heldInPass++;
      this.heldByCap = true;
      return now + Math.max(10, Math.ceil(s.avgMs * Math.ceil((ahead + s.heldInPass) / g.maxInFlight)));
    }
    if (g.rateLimit !== null) {
      // A PATCH may have lowered the limit: only the newest `rateLimit` admissions matter.
      if (s.sent.length > g.rateLimit) s.sent.splice(0, s.sent.length - g.rateLimit);
      // The window (now - 1 s, now] already holds rateLimit admissions: wait until the oldest leaves.
      if (s.sent.length === g.rateLimit && s.sent[0] > now - 1000) {
        // The k-th row held in this pass goes when the k-th oldest admission leaves its window.
        const k = s.heldInPass++;
        return s.sent[k % g.rateLimit] + 1000 * (Math.floor(k / g.rateLimit) + 1);
      }
      if (s.sent.length === g.rateLimit) s.sent.shift();
      s.sent.push(now);
    }
    if (this.breakerOn && s.openUntil !== 0) s.probing = true;
    s.flights.push({ at: now, slow: false });
    return 0;
  }

  /** In-flight attempts past `slowMs` count as failures once each (they are still in flight). */
  private countSlow(s: State, now: number): void {
    if (this.cfg.slowMs <= 0 || !this.breakerOn) return;
    for (const f of s.flights) {
      if (f.slow || now - f.at < this.cfg.slowMs) continue;
      f.slow = true;
      this.failed(s, now);
    }
  }

  private failed(s: State, now: number): void {
    s.fails++;
    if (s.probing) {
      s.probing = false;
      s.probeMs = Math.min(MAX_PROBE_MS, s.probeMs * 2);
      s.openUntil = now + s.probeMs;
    } else if (s.openUntil === 0 && s.fails >= this.cfg.breakerFailures) {
      s.openUntil = now + s.probeMs;
    }
  }

  /**
   * An admitted attempt ended: `startedAt` the `now` it was admitted at; `ok` a 2xx; `automatic`
   * not a manual send.
   */
  finished(id: string, startedAt: number, ok: boolean, automatic: boolean, durationMs: number, now: number): void {
    const s = this.state(id);
    const i = s.flights.findIndex((f) => f.at === startedAt);
    const flight = i >= 0 ? s.flights.splice(i, 1)[0] : undefined;
    s.avgMs = s.avgMs * 0.8 + durationMs * 0.2;
    if (!this.breakerOn || !automatic) return;
    if (ok) {
      s.fails = 0;
      s.openUntil = 0;
      s.probing = false;
      s.probeMs = this.cfg.breakerProbeMs;
      return;
    }
    // Already counted while it hung.
    if (flight?.slow) return;
    this.failed(s, now);
  }

  /** Whether the endpoint's breaker is open or half-open (status, tests). */
  isOpen(id: string): boolean {
    return (this.states.get(id)?.openUntil ?? 0) !== 0;
  }

  /** Attempts of the endpoint in flight (status, tests). */
  inFlight(id: string): number {
    return this.states.get(id)?.flights.length ?? 0;
  }
}
