import { TimeoutError } from './outcome.js';

/** Attempts started within this many ms share one deadline. */
export const GROUP_MS = 100;

/** An attempt's limit: `watch` is called once with the reason when it passes (or at once if it has). */
export interface Deadline {
  readonly reason: Error | null;
  watch(onAbort: (reason: Error) => void): void;
  unwatch(onAbort: (reason: Error) => void): void;
}

/** A group's attempts told of its end: a Set, where an AbortSignal's listeners cost about 1% of a delivery (decision 0264). */
class Group implements Deadline {
  reason: Error | null = null;
  pending = 0;
  timer: NodeJS.Timeout | undefined;
  private readonly watchers = new Set<(reason: Error) => void>();

  constructor(readonly openedAt: number) {}

  watch(onAbort: (reason: Error) => void): void {
    if (this.reason) onAbort(this.reason);
    else this.watchers.add(onAbort);
  }

  unwatch(onAbort: (reason: Error) => void): void {
    this.watchers.delete(onAbort);
  }

  abort(reason: Error): void {
    if (this.reason) return;
    this.reason = reason;
    for (const w of this.watchers) w(reason);
    this.watchers.clear();
  }
}

/**
 * The whole-attempt limit of webhook deliveries, shared: attempts started within the same GROUP_MS
 * share one AbortController and one timer, fired GROUP_MS + timeout after the group opened, so each
 * attempt gets at least `timeoutMs` and at most `timeoutMs + GROUP_MS`. A controller and a timer per
 * attempt cost about 7% of a delivery's CPU. A group's timer is cleared once its last attempt ends.
 */
export class AttemptDeadlines {
  /** The group new attempts join until it is GROUP_MS old. */
  private open: Group | undefined;
  private readonly live = new Set<Group>();

  constructor(private readonly timeoutMs: number) {}

  /** The deadline of an attempt starting now (`performance.now()`); `leave` it when it ends. */
  join(nowMs: number): Deadline {
    let g = this.open;
    if (!g || nowMs - g.openedAt >= GROUP_MS) {
      if (g && g.pending === 0) this.drop(g);
      const ng = new Group(nowMs);
      ng.timer = setTimeout(() => {
        this.live.delete(ng);
        ng.abort(new TimeoutError());
      }, GROUP_MS + this.timeoutMs);
      ng.timer.unref();
      this.live.add(ng);
      this.open = g = ng;
    }
    g.pending++;
    return g;
  }

  leave(d: Deadline): void {
    const g = d as Group;
    g.pending--;
    if (g.pending === 0 && g !== this.open) this.drop(g);
  }

  /** Ends every attempt in flight (the worker is stopping). */
  abortAll(): void {
    for (const g of this.live) {
      clearTimeout(g.timer);
      g.abort(new Error('aborted'));
    }
    this.live.clear();
    this.open = undefined;
  }

  private drop(g: Group): void {
    clearTimeout(g.timer);
    this.live.delete(g);
  }
}
