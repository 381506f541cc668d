import type { AppContext } from '../../../context.js';
import type { FrameBudget, LinkInvalid, ServerLink } from '../../../../devices/index.js';

/** The frame budget of every terminal link (`terminals.link_*`, docs/terminal-protocol.md "Frame budget"). */
export function linkBudget(cfg: AppContext['config']['terminals']): FrameBudget {
  return { framesPerSecond: cfg.link_frames_per_second, bytesPerSecond: cfg.link_bytes_per_second, closeAfterSeconds: cfg.link_close_after_s };
}

const INVALID_LOG_EVERY_MS = 10_000;

/**
 * The log lines a link's trouble writes: at most one malformed-message line per link every 10 s
 * (with how many went unlogged meanwhile: a terminal sending garbage within its budget must not
 * write a line per frame), and one line when a link is closed over its budget.
 */
export class LinkLog {
  private readonly invalid = new WeakMap<ServerLink, { at: number; unlogged: number }>();

  constructor(
    private readonly ctx: AppContext,
    private readonly now: () => number,
  ) {}

  watch(link: ServerLink, terminalId: string | undefined): void {
    void link.whenDown.then((d) => {
      if (d.flooded) {
        this.ctx.log.warn({ event: 'terminal.link_flooded', terminal_id: terminalId, transport: link.transport, reason: d.detail }, 'terminal link closed: over its frame budget');
      }
    });
  }

  malformed(link: ServerLink, terminalId: string | undefined, i: LinkInvalid): void {
    const now = this.now();
    const seen = this.invalid.get(link);
    if (seen && now - seen.at < INVALID_LOG_EVERY_MS) {
      seen.unlogged++;
      return;
    }
    this.invalid.set(link, { at: now, unlogged: 0 });
    this.ctx.log.warn(
      { terminal_id: terminalId, reason: i.reason, detail: i.detail, sample: i.sample, unlogged_since_last: seen?.unlogged ?? 0 },
      'malformed terminal message ignored',
    );
  }
}
