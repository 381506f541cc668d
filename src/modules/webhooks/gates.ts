/**
 * Per-endpoint gates (docs/webhooks.md): a throttle (`rate_limit`, messages per second, a token
 * bucket holding one second's worth), a cap on the endpoint's attempts in flight (`max_in_flight`)
 * and a circuit breaker (`webhooks.breaker_failures` automatic attempts failed or timed out in a
 * row open it; after `webhooks.breaker_probe_ms` one probe goes; its success closes it, its
 * failure opens it again for twice as long, up to ten minutes). A delivery an endpoint's gate holds
 * back is not attempted: it is rescheduled (its `next_attempt_ms`) to when the gate should let it
 * through, so it leaves the due window and the other endpoints' deliveries take the slots. Only
 * endpoints with a gate are looked at: with none configured, the worker does not call in here.
 */
export interface GateSettings {
  rateLimit: number | null;
  maxInFlight: number | null;
}

interface State {
  tokens: number;
  refilledAt: number;
  inflight: number;
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

  constructor(
    private readonly breakerFailures: number,
    private readonly breakerProbeMs: number,
  ) {}

  get breakerOn(): boolean {
    return this.breakerFailures > 0;
  }

  /** A new dispatch pass: the rows held back are counted again. */
  newPass(): void {
    this.pass++;
  }

  private state(id: string, now: number): State {
    let s = this.states.get(id);
    if (!s) {
      s = { tokens: Number.POSITIVE_INFINITY, refilledAt: now, inflight: 0, heldInPass: 0, pass: -1, fails: 0, openUntil: 0, probeMs: this.breakerProbeMs, probing: false, avgMs: 100 };
      this.states.set(id, s);
    }
    if (s.pass !== this.pass) {
      s.pass = this.pass;
      s.heldInPass = 0;
    }
    return s;
  }

  /** 0: send it now (counted as in flight until `finished`); otherwise the time to reschedule it to. */
  admit(id: string, g: GateSettings, now: number): number {
    const s = this.state(id, now);
    if (this.breakerOn && s.openUntil !== 0) {
      if (now < s.openUntil) return s.openUntil;
      // Half-open: one probe at a time.
      if (s.probing) return now + s.probeMs;
    }
    if (g.maxInFlight !== null && s.inflight >= g.maxInFlight) {
      s.heldInPass++;
      return now + Math.max(10, Math.ceil(s.avgMs * Math.ceil(s.heldInPass / g.maxInFlight)));
    }
    if (g.rateLimit !== null) {
      const interval = 1000 / g.rateLimit;
      s.tokens = Math.min(Math.max(1, g.rateLimit), (s.tokens === Number.POSITIVE_INFINITY ? Math.max(1, g.rateLimit) : s.tokens) + (now - s.refilledAt) / interval);
      s.refilledAt = now;
      if (s.tokens < 1) {
        s.heldInPass++;
        return now + Math.ceil((1 - s.tokens + s.heldInPass - 1) * interval);
      }
      s.tokens -= 1;
    }
    if (this.breakerOn && s.openUntil !== 0) s.probing = true;
    s.inflight++;
    return 0;
  }

  /** An admitted attempt ended: `ok` a 2xx; `automatic` not a manual send. */
  finished(id: string, ok: boolean, automatic: boolean, durationMs: number, now: number): void {
    const s = this.state(id, now);
    s.inflight = Math.max(0, s.inflight - 1);
    s.avgMs = s.avgMs * 0.8 + durationMs * 0.2;
    if (!this.breakerOn || !automatic) return;
    if (ok) {
      s.fails = 0;
      s.openUntil = 0;
      s.probing = false;
      s.probeMs = this.breakerProbeMs;
      return;
    }
    s.fails++;
    if (s.probing) {
      s.probing = false;
      s.probeMs = Math.min(MAX_PROBE_MS, s.probeMs * 2);
      s.openUntil = now + s.probeMs;
    } else if (s.openUntil === 0 && s.fails >= this.breakerFailures) {
      s.openUntil = now + s.probeMs;
    }
  }

  /** Whether the endpoint's breaker is open or half-open (status, tests). */
  isOpen(id: string): boolean {
    return (this.states.get(id)?.openUntil ?? 0) !== 0;
  }
}
