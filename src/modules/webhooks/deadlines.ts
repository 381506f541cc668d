import { setMaxListeners } from 'node:events';
import { TimeoutError } from './outcome.js';

/** Attempts started within this many ms share one deadline. */
export const GROUP_MS = 100;

export interface Deadline {
  readonly signal: AbortSignal;
}

interface Group extends Deadline {
  openedAt: number;
  controller: AbortController;
  pending: number;
  timer: NodeJS.Timeout;
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
      const controller = new AbortController();
      // One listener per attempt in the group: many more than EventTarget's warning threshold.
      setMaxListeners(0, controller.signal);
      const ng: Group = { openedAt: nowMs, controller, signal: controller.signal, pending: 0, timer: undefined as unknown as NodeJS.Timeout };
      ng.timer = setTimeout(() => {
        this.live.delete(ng);
        ng.controller.abort(new TimeoutError());
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
      g.controller.abort();
    }
    this.live.clear();
    this.open = undefined;
  }

  private drop(g: Group): void {
    clearTimeout(g.timer);
    this.live.delete(g);
  }
}
