import type { Clock as Scheduler, TimerHandle } from '../../../../devices/index.js';

/**
 * The bridge's status timers, one per offered command: `due` runs once `afterMs()` passed without
 * the timer being armed again or cleared (news from the terminal re-arms it, a final result clears it).
 */
export class StatusTimers {
  private readonly timers = new Map<string, TimerHandle>();

  constructor(
    private readonly scheduler: Scheduler,
    private readonly afterMs: () => number,
    private readonly due: (commandId: string) => void,
  ) {}

  arm(commandId: string): void {
    this.clear(commandId);
    const timer = this.scheduler.setTimeout(() => {
      this.timers.delete(commandId);
      this.due(commandId);
    }, this.afterMs());
    this.timers.set(commandId, timer);
  }

  clear(commandId: string): void {
    const t = this.timers.get(commandId);
    if (t) this.scheduler.clearTimeout(t);
    this.timers.delete(commandId);
  }

  clearAll(): void {
    for (const t of this.timers.values()) this.scheduler.clearTimeout(t);
    this.timers.clear();
  }
}
