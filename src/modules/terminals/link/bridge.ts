import { EventEmitter } from 'node:events';
import { groupCommit } from '../../../db/group-commit.js';
import type WebSocket from 'ws';
import type { AppContext } from '../../../context.js';
import { isoTime } from '../../../clock.js';
import {
  answerHello,
  serverLinkFromWebSocket,
  sessionProtocol,
  type Clock as Scheduler,
  type Hello,
  type Result,
  type ServerLink,
  type ServerMessage,
  type TerminalMessage,
} from '../../../../devices/index.js';
import { markAllUnavailable, recordAvailability, recordHello, terminalRow } from '../service.js';
import { StoredPaymentLink } from '../stored/link.js';
import { awaitTerminalHello, verifyHello } from './handshake.js';
import { linkBudget, logMalformed } from './budget.js';
import { scheduleHeartbeat, touch, type Session } from './session.js';
import { StatusTimers } from './status-timers.js';
import { offerInCreatingCommit, pumpInGroupCommit, type CommitOffers } from './offer.js';
import { applyNews, commitNews, ownCommand } from './news.js';
import { terminalSignals } from '../signals.js';
import { applyTerminalEvent, commandContext, commandRow, currentCommandOf, openCommands } from '../commands/service.js';
import type { TerminalOutcome } from '../commands/machine.js';

export type BridgeEvents = {
  /** A message from a terminal was fully handled (committed, answered): tests and benchmarks wait on it. */
  handled: [terminalId: string, msg: TerminalMessage];
  /** A hello was accepted and reconciled. */
  attached: [terminalId: string];
};

/**
 * The bridge between command machines and device links. It authenticates hellos against the
 * registry, hands each terminal its one current command, relays cancels, asks for status after
 * `dispatch_timeout_ms` without news, reconciles a reconnecting terminal's current command and
 * unacknowledged results, and commits every outcome before acknowledging it. It keeps no state a
 * restart would lose: everything it decides comes from the command rows.
 */
export class TerminalBridge {
  readonly sessions = new Map<string, Session>();
  /** No news of an offered command for `dispatch_timeout_ms`: ask the terminal its status. */
  private readonly timers: StatusTimers;
  private readonly scheduler: Scheduler;
  private started = false;
  private readonly onSignal = (terminalId: string, commandId: string, effects: Array<{ type: string }>) =>
    this.onCommandChanged(terminalId, commandId, effects);
  private readonly onCreated = (terminalId: string, commandId: string) => offerInCreatingCommit(this.ctx, this.commitOffers, terminalId, commandId);
  private readonly commitOffers: CommitOffers = {
    liveSession: (id) => {
      const s = this.sessions.get(id);
      return s && !s.link.isDown ? s : undefined;
    },
    session: (id) => this.sessions.get(id),
    armStatusTimer: (id) => this.timers.arm(id),
    guard: (what, fn, fields) => this.guard(what, fn, fields),
  };
  private readonly onRetired = (terminalId: string) => {
    const s = this.sessions.get(terminalId);
    if (s) void s.link.close('terminal retired');
  };
  readonly events = new EventEmitter<BridgeEvents>().setMaxListeners(0);

  /** Stored payments (protocol 2): offline policies, forward results, forward deadlines (stored/link.ts). */
  private readonly stored: StoredPaymentLink;

  constructor(
    private readonly ctx: AppContext,
    scheduler: Scheduler,
  ) {
    this.scheduler = scheduler;
    this.timers = new StatusTimers(
      scheduler,
      () => this.cfg.dispatch_timeout_ms,
      (commandId) => this.guard('a status request', () => this.onTimeout(commandId), { command_id: commandId }),
    );
    this.stored = new StoredPaymentLink(ctx, scheduler, {
      sessions: () => this.sessions.values(),
      send: (session, msg) => this.send(session as Session, msg),
      guard: (what, fn, fields) => this.guard(what, fn, fields),
      started: () => this.started,
    });
  }

  /** The caps are the account's, shared by its terminals: one terminal's stored payment changes every policy. */
  refreshPolicies(accountId?: string): void {
    this.stored.refreshPolicies(accountId);
  }

  /**
   * Entry points from timers, links and API signals run through here: a failure (a busy database,
   * a bug) is logged and leaves the command as committed, never an uncaught exception that would
   * take the store's payments down. The next hello or status timer retries from the rows.
   */
  private guard(what: string, fn: () => void, fields: Record<string, unknown> = {}): void {
    try {
      fn();
    } catch (err) {
      this.ctx.log.error({ err, ...fields }, `terminal bridge: ${what} failed`);
    }
  }

  private readonly guardFn = (what: string, fn: () => void, fields?: Record<string, unknown>) => this.guard(what, fn, fields);

  private get cfg() {
    return this.ctx.config.terminals;
  }

  /**
   * Rehydration, before the server listens: terminals are unavailable until they say hello again,
   * every open command that was offered gets its status timer back; the rest follows from the rows.
   */
  start(): void {
    if (this.started) return;
    this.started = true;
    markAllUnavailable(this.ctx);
    const signals = terminalSignals(this.ctx);
    signals.on('command', this.onSignal);
    signals.on('created', this.onCreated);
    signals.on('retired', this.onRetired);
    for (const row of openCommands(this.ctx)) {
      if (commandContext(row).offered) this.timers.arm(row.id);
    }
    this.stored.start();
  }

  async stop(): Promise<void> {
    this.started = false;
    const signals = terminalSignals(this.ctx);
    signals.off('command', this.onSignal);
    signals.off('created', this.onCreated);
    signals.off('retired', this.onRetired);
    this.timers.clearAll();
    this.stored.stop();
    await Promise.all([...this.sessions.values()].map((s) => s.link.close('posd stopping')));
  }

  // ---- Links ----

  acceptWebSocket(ws: WebSocket): void {
    const link = serverLinkFromWebSocket(ws, {
      clock: this.scheduler,
      pingIntervalMs: this.cfg.ping_interval_ms,
      maxMissedPings: this.cfg.max_missed_pings,
      budget: linkBudget(this.cfg),
    });
    this.acceptLink(link);
  }

  /** Runs the hello handshake on a fresh link; `expectedTerminalId` pins a serial port to its terminal. */
  acceptLink(link: ServerLink, expectedTerminalId?: string): void {
    awaitTerminalHello(this.ctx, this.scheduler, link, expectedTerminalId, (hello) =>
      this.guard('attaching a terminal', () => this.attach(link, hello, expectedTerminalId), { terminal_id: hello.terminal_id }),
    );
  }

  private attach(link: ServerLink, hello: Hello, expectedTerminalId: string | undefined): void {
    const id = hello.terminal_id;
    const old = this.sessions.get(id);
    const session: Session = {
      terminalId: id,
      accountId: terminalRow(this.ctx, id)!.account_id,
      protocol: sessionProtocol(hello),
      link,
      lastSeenWritten: this.scheduler.now(),
      seenCount: link.messagesReceived,
    };
    this.sessions.set(id, session);
    // A terminal that reconnects before its old link noticed it was gone: the new link wins.
    if (old && old.link !== link) void old.link.close('replaced by a new link');
    recordHello(this.ctx, id, hello.model, hello.firmware);
    this.ctx.log.info({ terminal_id: id, transport: link.transport, model: hello.model, firmware: hello.firmware }, 'terminal connected');

    link.on('message', (msg) => {
      void this.onMessage(session, msg, expectedTerminalId).catch((err) =>
        this.ctx.log.error({ err, terminal_id: id, type: msg.type }, 'handling a terminal message failed'),
      );
    });
    link.on('invalid', (i) => logMalformed(this.ctx, link, id, i));
    link.once('down', (d) => {
      this.scheduler.clearTimeout(session.heartbeat);
      if (this.sessions.get(id) !== session) return;
      this.sessions.delete(id);
      this.guard('recording unavailability', () => recordAvailability(this.ctx, id, 'unavailable'), { terminal_id: id });
      this.ctx.log.info({ terminal_id: id, reason: d.detail }, 'terminal disconnected');
    });
    scheduleHeartbeat(this.ctx, this.scheduler, session, this.guardFn);
    // Before anything else after welcome: the terminal must know what it may store before a charge.
    this.stored.sendPolicy(session);
    // Attached once the results it kept are committed and acknowledged (they join a group commit).
    void this.reconcile(session, hello).then(
      () => this.events.emit('attached', id),
      (err) => this.ctx.log.error({ err, terminal_id: id }, 'terminal bridge: reconciling failed'),
    );
  }

  /** Frames other than a charge (a charge leaves from its OFFER's group commit once durable: offer.ts). */
  private send(session: Session, msg: ServerMessage): void {
    session.link.send(msg).catch((err: Error) =>
      // A lost send is recovered from state: the status timer, or the next hello's reconciliation.
      this.ctx.log.warn({ terminal_id: session.terminalId, type: msg.type, err: err.message }, 'send to terminal failed'),
    );
  }

  // ---- Messages ----

  private async onMessage(session: Session, msg: TerminalMessage, expectedTerminalId: string | undefined): Promise<void> {
    if (this.sessions.get(session.terminalId) !== session) return;
    touch(this.ctx, this.scheduler, session);
    switch (msg.type) {
      case 'hello': {
        // On a serial line a terminal that restarts says hello again on the same link.
        const ok = await answerHello(session.link, msg, {
          clock: this.scheduler,
          verify: (h) => h.terminal_id === session.terminalId && verifyHello(this.ctx, session.link, h, expectedTerminalId),
        }).then(
          () => true,
          () => false,
        );
        if (ok) {
          recordHello(this.ctx, session.terminalId, msg.model, msg.firmware);
          session.protocol = sessionProtocol(msg);
          session.lastPolicy = undefined;
          this.stored.sendPolicy(session);
          await this.reconcile(session, msg);
        }
        break;
      }
      case 'ack':
        await commitNews(this.ctx, this.timers, session, msg.command_id, { type: 'TAKEN', at: this.nowIso() });
        break;
      case 'progress':
        await commitNews(this.ctx, this.timers, session, msg.command_id, { type: 'TAKEN', at: this.nowIso(), stage: msg.stage });
        break;
      case 'result':
        await this.onResult(session, msg);
        break;
      case 'forward_result':
        await this.stored.onForwardResult(session, msg);
        break;
    }
    this.events.emit('handled', session.terminalId, msg);
  }

  private nowIso(): string {
    return isoTime(this.ctx.clock.now());
  }

  /**
   * Commit the outcome, THEN acknowledge it: a crash in between makes the terminal resend it. The
   * outcome joins the next group commit with the API's writes, so a terminal's result never costs
   * the box a flush of its own.
   */
  private async onResult(session: Session, r: Omit<Result, 'type'> & { type?: 'result' }): Promise<void> {
    const row = ownCommand(this.ctx, session, r.command_id);
    if (!row) return;
    const outcome: TerminalOutcome = {
      outcome: r.outcome,
      authorization_code: r.authorization_code ?? null,
      card: r.card ?? null,
      processor_reference: r.processor_reference ?? null,
      processor_reference_at: r.processor_reference_at ?? null,
      reason: r.reason ?? null,
      offline_reference: r.offline_reference ?? null,
    };
    const ctxBefore = commandContext(row);
    // "I do not know this command" from a terminal that never took it means it never held it.
    const notHeld = r.outcome === 'error' && r.reason === 'unknown_command' && !ctxBefore.taken && row.final === 0;
    const applied = await groupCommit(this.ctx.db, () =>
      notHeld
        ? applyTerminalEvent(this.ctx, row.id, { type: 'NOT_HELD', at: this.nowIso() })
        : applyTerminalEvent(this.ctx, row.id, { type: 'RESULT', at: this.nowIso(), ...outcome }),
    );
    if (applied?.row.final === 1) this.timers.clear(row.id);
    if (applied?.changed?.effects.some((e) => e.type === 'requestStatus')) {
      // Not acknowledged: the terminal keeps the result, and its answer to the status request
      // (that result again, or what really happened) settles the command.
      this.ctx.log.warn(
        { terminal_id: session.terminalId, command_id: row.id },
        'terminal reported canceled after authorizing; asking its status before believing it',
      );
      this.send(session, { type: 'status_request', command_id: row.id });
      this.timers.arm(row.id);
      return;
    }
    if (applied?.changed) {
      this.ctx.log.info({ terminal_id: session.terminalId, command_id: row.id, status: applied.row.status }, 'terminal command updated');
    }
    if (!notHeld) this.send(session, { type: 'result_ack', command_id: row.id });
    if (r.outcome === 'stored' && applied?.changed) {
      this.stored.refreshPolicies(row.account_id);
      this.stored.scheduleDeadline();
    }
    this.pump(session);
  }

  /**
   * After a hello: settle the results the terminal kept, learn whether it still holds the command
   * it was offered, re-send a pending cancel, then hand it its current command.
   */
  private async reconcile(session: Session, hello: Hello): Promise<void> {
    // Together: the kept results share one commit, in the order the terminal listed them.
    await Promise.all(hello.unacknowledged_results.map((r) => this.onResult(session, r)));
    const reported = new Set(hello.unacknowledged_results.map((r) => r.command_id));
    const held = hello.current_command_id;
    if (held && !reported.has(held)) applyNews(this.ctx, this.timers, session, held, { type: 'TAKEN', at: this.nowIso() });
    for (const row of openCommands(this.ctx, session.terminalId)) {
      if (row.id === held || reported.has(row.id)) continue;
      const c = commandContext(row);
      if (!c.offered) continue;
      if (!c.taken) applyTerminalEvent(this.ctx, row.id, { type: 'NOT_HELD', at: this.nowIso() });
      // It took the command, does not hold it now and reported no result: it must say what happened.
      else this.send(session, { type: 'status_request', command_id: row.id });
    }
    const current = currentCommandOf(this.ctx, session.terminalId);
    if (current?.status === 'cancel_requested') this.send(session, { type: 'cancel', command_id: current.id });
    this.pump(session);
  }

  /** Hands the terminal its one current command if it has not been offered yet (offer.ts). */
  pump(session: Session): void {
    if (session.link.isDown || this.sessions.get(session.terminalId) !== session) return;
    pumpInGroupCommit(this.ctx, this.commitOffers, session).catch((err: Error) =>
      this.ctx.log.error({ err, terminal_id: session.terminalId }, 'terminal bridge: offering a command failed'),
    );
  }

  private onCommandChanged(terminalId: string, commandId: string, effects: Array<{ type: string }>): void {
    const session = this.sessions.get(terminalId);
    if (!session) return;
    if (effects.some((e) => e.type === 'sendCancel')) this.send(session, { type: 'cancel', command_id: commandId });
    // The API change is committed already: a failure here must not turn its response into a 500.
    this.guard('dispatching', () => this.pump(session), { terminal_id: terminalId, command_id: commandId });
  }

  // ---- Status timers ----

  /** No news for dispatch_timeout: ask. Never decide on our own while the terminal may still charge. */
  private onTimeout(commandId: string): void {
    if (!this.started) return;
    const row = commandRow(this.ctx, commandId);
    if (!row || row.final === 1) return;
    const session = this.sessions.get(row.terminal_id);
    if (session) {
      this.ctx.log.info({ terminal_id: row.terminal_id, command_id: commandId }, 'no news from terminal: asking its status');
      this.send(session, { type: 'status_request', command_id: commandId });
    }
    this.timers.arm(commandId);
  }
}
