import { groupCommit } from '../../../db/group-commit.js';
import type { AppContext } from '../../../context.js';
import { isoTime } from '../../../clock.js';
import type { ForwardResult, Clock as Scheduler, ServerMessage, TimerHandle } from '../../../../devices/index.js';
import { applyForwardResult, expireDuePayments, nextForwardDeadline, nextPolicyTimeChange, offlinePolicyFor } from './service.js';

const POLICY_REFRESH_MS = 5_000;

/** What the stored-payment handling needs of a terminal's session (link/bridge.ts holds the sessions). */
export interface LinkSession {
  terminalId: string;
  accountId: string;
  /** The negotiated protocol version: 2 and up hear offline policies and may store payments. */
  protocol: number;
  /** The last offline_policy sent, as JSON: a policy is sent again only when it changed. */
  lastPolicy?: string;
  link: { readonly isDown: boolean };
}

/** What it asks of the bridge around it. */
export interface BridgeSide {
  sessions(): Iterable<LinkSession>;
  send(session: LinkSession, msg: ServerMessage): void;
  /** Runs `fn`, logging a failure instead of throwing (the bridge's entry-point guard). */
  guard(what: string, fn: () => void, fields?: Record<string, unknown>): void;
  started(): boolean;
}

/**
 * The terminal bridge's stored payments (protocol 2): each terminal's offline policy, kept current;
 * forward results, committed before they are acknowledged; and one timer that expires the stored
 * payments not forwarded by their deadline.
 */
export class StoredPaymentLink {
  private deadlineTimer: TimerHandle | undefined;
  private policyTimer: TimerHandle | undefined;
  /** What the last re-read saw: the database's data_version (another process's commit moves it) and the next change by the clock. */
  private seenVersion = -1;
  private quietUntil = 0;

  constructor(
    private readonly ctx: AppContext,
    private readonly scheduler: Scheduler,
    private readonly bridge: BridgeSide,
  ) {}

  /** At the bridge's start: expires what is overdue, arms the deadline and the policy re-read. */
  start(): void {
    this.bridge.guard('expiring stored payments', () => this.onDeadline());
    this.schedulePolicyRefresh();
  }

  stop(): void {
    this.scheduler.clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    this.scheduler.clearTimeout(this.policyTimer);
    this.policyTimer = undefined;
  }

  /**
   * Caps and overrides also change from the shell (`posd payments offline`, another process) and
   * overrides end on their own: the policies are recomputed every few seconds, sent only when changed.
   */
  private schedulePolicyRefresh(): void {
    this.policyTimer = this.scheduler.setTimeout(() => {
      if (!this.bridge.started()) return;
      // No terminal linked: nothing to send, and a clock moved by days (a test's, or a box's after
      // suspend) fires this timer once per period, so the check must cost nothing then.
      if (!this.bridge.sessions()[Symbol.iterator]().next().done) this.bridge.guard('re-reading the offline policies', () => this.reread());
      this.schedulePolicyRefresh();
    }, POLICY_REFRESH_MS);
  }

  /**
   * Recomputes the policies only when they may have changed: another process committed (the
   * shell's `posd payments offline`), or the clock reached an override's end or a deadline. This
   * process's own changes send the new policy when they commit (refreshPolicies), so a quiet box
   * costs one pragma every few seconds instead of a policy per terminal.
   */
  private reread(): void {
    const version = this.ctx.db.pragma('data_version', { simple: true }) as number;
    if (version === this.seenVersion && this.ctx.clock.now() < this.quietUntil) return;
    this.seenVersion = version;
    const next = nextPolicyTimeChange(this.ctx);
    this.quietUntil = next === null ? Number.POSITIVE_INFINITY : Date.parse(next);
    this.refreshPolicies();
  }

  /**
   * Commit the forward result, THEN acknowledge it; an unknown reference is not acknowledged. It joins
   * the next group commit, like a result.
   */
  async onForwardResult(session: LinkSession, f: ForwardResult): Promise<void> {
    const applied = await groupCommit(this.ctx.db, () =>
      applyForwardResult(this.ctx, {
        terminalId: session.terminalId,
        commandId: f.command_id,
        offlineReference: f.offline_reference,
        outcome: f.outcome,
        authorizationCode: f.authorization_code ?? null,
        processorReference: f.processor_reference ?? null,
        reason: f.reason ?? null,
        card: f.card ?? null,
        at: isoTime(this.ctx.clock.now()),
      }),
    );
    if (!applied.known) {
      this.ctx.log.warn(
        { terminal_id: session.terminalId, command_id: f.command_id, offline_reference: f.offline_reference },
        'forward result for a stored payment posd does not hold; not acknowledged',
      );
      return;
    }
    if (applied.changed) {
      this.ctx.log.info({ terminal_id: session.terminalId, stored_payment_id: applied.row.id, status: applied.row.status }, 'stored payment updated');
    }
    this.bridge.send(session, { type: 'forward_ack', offline_reference: f.offline_reference, outcome: f.outcome });
    if (applied.changed) this.refreshPolicies(session.accountId);
  }

  sendPolicy(session: LinkSession): void {
    if (session.protocol < 2 || session.link.isDown) return;
    // The terminal's own: its account's caps, and its own beside them (a terminal may have tighter ones).
    const policy = offlinePolicyFor(this.ctx, session.accountId, session.terminalId);
    const json = JSON.stringify(policy);
    if (json === session.lastPolicy) return;
    session.lastPolicy = json;
    this.bridge.send(session, { type: 'offline_policy', ...policy });
  }

  /** The account's caps are shared by its terminals: one terminal's stored payment changes every policy. */
  refreshPolicies(accountId?: string): void {
    for (const s of this.bridge.sessions()) {
      if (accountId === undefined || s.accountId === accountId)
        this.bridge.guard('sending an offline policy', () => this.sendPolicy(s), { terminal_id: s.terminalId });
    }
  }

  /** One timer, at the earliest deadline of a stored payment never forwarded. */
  scheduleDeadline(): void {
    this.scheduler.clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    if (!this.bridge.started()) return;
    const next = nextForwardDeadline(this.ctx);
    if (next === null) return;
    const wait = Math.max(0, Date.parse(next) - this.ctx.clock.now());
    this.deadlineTimer = this.scheduler.setTimeout(() => this.bridge.guard('expiring stored payments', () => this.onDeadline()), wait);
  }

  private onDeadline(): void {
    this.deadlineTimer = undefined;
    if (!this.bridge.started()) return;
    const expired = expireDuePayments(this.ctx);
    for (const row of expired) {
      this.ctx.log.warn(
        { stored_payment_id: row.id, command_id: row.command_id, terminal_id: row.terminal_id },
        'stored payment expired: not forwarded by its deadline',
      );
    }
    if (expired.length) this.refreshPolicies();
    this.scheduleDeadline();
  }
}
