/**
 * Time as a dependency. Every timer in devices/ goes through a Clock so tests of resend, ping and
 * back-off paths advance time by hand instead of sleeping.
 */
export type TimerHandle = object;

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
}

export function realClock(): Clock {
  return {
    now: () => Date.now(),
    setTimeout: (fn, ms) => {
      const t = setTimeout(fn, ms);
      // A pending resend or ping must not keep a finished process (or test worker) alive.
      t.unref?.();
      return t;
    },
    clearTimeout: (h) => {
      if (h !== undefined) clearTimeout(h as NodeJS.Timeout);
    },
  };
}

interface ManualTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that only moves when told to. Timers due at the same instant fire in creation order,
 * and timers created while advancing fire in the same advance if they fall due inside it.
 */
export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Map<object, ManualTimer>();

  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const handle = {};
    this.timers.set(handle, { at: this.current + Math.max(0, ms), seq: this.seq++, fn });
    return handle;
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle) this.timers.delete(handle);
  }

  pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing each due timer at its own instant. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let next: [object, ManualTimer] | undefined;
      for (const entry of this.timers) {
        if (entry[1].at > target) continue;
        if (!next || entry[1].at < next[1].at || (entry[1].at === next[1].at && entry[1].seq < next[1].seq)) next = entry;
      }
      if (!next) break;
      this.timers.delete(next[0]);
      this.current = next[1].at;
      next[1].fn();
    }
    this.current = target;
  }

  /** Advances in steps, letting promise callbacks (awaited sends, writes) run between steps. */
  async advanceAsync(ms: number, stepMs = ms): Promise<void> {
    let left = ms;
    while (left > 0) {
      const step = Math.min(stepMs, left);
      this.advance(step);
      left -= step;
      await new Promise<void>((r) => setImmediate(r));
    }
  }
}
