import type { AppContext } from '../../../context.js';
import { groupCommit } from '../../../db/group-commit.js';
import type { Clock as Scheduler, ServerLink, TimerHandle } from '../../../../devices/index.js';
import { recordSeen } from '../service.js';
import type { LinkSession } from '../stored/link.js';

/** One attached terminal's link, as the bridge (bridge.ts) keeps it. */
export interface Session extends LinkSession {
  link: ServerLink;
  lastSeenWritten: number;
  seenCount: number;
  heartbeat?: TimerHandle;
}

/** Writing last_seen_at on every message would be a commit per message; once a second is plenty. */
const SEEN_WRITE_EVERY_MS = 1_000;

type Guard = (what: string, fn: () => void, fields?: Record<string, unknown>) => void;

/**
 * last_seen_at follows the link's traffic, pings included (the link counts every valid message). It
 * is written through the group commit: it joins whatever else commits in that turn and its flush is
 * off the event loop (decision 0291).
 */
export function scheduleHeartbeat(ctx: AppContext, scheduler: Scheduler, session: Session, guard: Guard): void {
  const every = ctx.config.terminals.ping_interval_ms;
  if (every <= 0) return;
  session.heartbeat = scheduler.setTimeout(() => {
    if (session.link.isDown) return;
    if (session.link.messagesReceived !== session.seenCount) guard('recording a heartbeat', () => touch(ctx, scheduler, session, true));
    scheduleHeartbeat(ctx, scheduler, session, guard);
  }, every);
}

export function touch(ctx: AppContext, scheduler: Scheduler, session: Session, force = false): void {
  session.seenCount = session.link.messagesReceived;
  const now = scheduler.now();
  if (!force && now - session.lastSeenWritten < SEEN_WRITE_EVERY_MS) return;
  session.lastSeenWritten = now;
  groupCommit(ctx.db, () => recordSeen(ctx, session.terminalId, now)).catch((err: Error) =>
    ctx.log.warn({ terminal_id: session.terminalId, err: err.message }, 'recording when a terminal was last seen failed'),
  );
}
