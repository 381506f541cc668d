import type { AppContext } from '../../../context.js';
import type { FrameBudget, LinkInvalid, ServerLink } from '../../../../devices/index.js';

/** The frame budget of every terminal link (`terminals.link_*`, docs/terminal-protocol.md "Frame budget"). */
export function linkBudget(cfg: AppContext['config']['terminals']): FrameBudget {
  return { framesPerSecond: cfg.link_frames_per_second, bytesPerSecond: cfg.link_bytes_per_second, closeAfterSeconds: cfg.link_close_after_s };
}

const INVALID_LOG_EVERY_MS = 10_000;
const invalidLogged = new WeakMap<ServerLink, { at: number; unlogged: number }>();

/** One line when a link is closed over its budget, whoever holds it (handshake or session). */
export function watchFlood(ctx: AppContext, link: ServerLink, terminalId: string | undefined): void {
  void link.whenDown.then((d) => {
    if (d.flooded) {
      ctx.log.warn(
        { event: 'terminal.link_flooded', terminal_id: terminalId, transport: link.transport, reason: d.detail },
        'terminal link closed: over its frame budget',
      );
    }
  });
}

/**
 * At most one malformed-message line per link every 10 s, with how many went unlogged meanwhile: a
 * terminal sending garbage within its budget must not write a line per frame.
 */
export function logMalformed(ctx: AppContext, link: ServerLink, terminalId: string | undefined, i: LinkInvalid): void {
  const now = ctx.clock.now();
  const seen = invalidLogged.get(link);
  if (seen && now - seen.at < INVALID_LOG_EVERY_MS) {
    seen.unlogged++;
    return;
  }
  invalidLogged.set(link, { at: now, unlogged: 0 });
  ctx.log.warn(
    { terminal_id: terminalId, reason: i.reason, detail: i.detail, sample: i.sample, unlogged_since_last: seen?.unlogged ?? 0 },
    'malformed terminal message ignored',
  );
}
