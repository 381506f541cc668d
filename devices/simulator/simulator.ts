/**
 * A scriptable card terminal speaking protocol v1 or v2 over either transport. In v2 it can be
 * put offline: it stores the charges its policy allows (outcome `stored`), and forwards them
 * when told (`forward`), each approved, declined or expired as scripted. Tests, benchmarks and
 * demos drive it; it misbehaves on request (decline, slowness, dropped links, ignored cancels,
 * silence, garbage) the way real terminals do.
 */
import { EventEmitter } from 'node:events';
import { realClock, type Clock, type TimerHandle } from '../clock.js';
import type { LinkDown, LinkInvalid, TerminalSideLink } from '../link.js';
import { framePayload } from '../protocol/frame.js';
import { PROTOCOL_VERSION } from '../protocol/messages.js';
import type {
  Cancel,
  Charge,
  ErrorMessage,
  ForwardAck,
  ForwardResult,
  OfflinePolicy,
  Result,
  ResultAck,
  ServerMessage,
  Stage,
  StatusRequest,
  TerminalMessage,
  Welcome,
} from '../protocol/messages.js';
import { canceledResult, DEFAULT_DELAYS, errorResult, finalResult, SLOW_DELAYS, STAGES, type BehaviourName, type StageDelays } from './behaviours.js';
import type { Connector } from './connectors.js';

export interface SimulatorOptions {
  terminalId: string;
  token: string;
  connect: Connector;
  behaviour?: BehaviourName;
  delays?: Partial<StageDelays>;
  model?: string;
  firmware?: string;
  /** Pause before reconnecting after a dropped link; 1 s by default. */
  reconnectDelayMs?: number;
  /** How unacknowledged results are replayed after a reconnect. */
  replayResults?: 'hello' | 'result' | 'both';
  clock?: Clock;
  /** The protocol version announced in hello: 1 (default) or 2 (stored payments). */
  protocol?: number;
  /** Version 2: start without a processor, storing the charges the policy allows. */
  offline?: boolean;
  /** Store even what the policy refuses: a terminal that decides alone (tests of over-cap flagging). */
  ignoreOfflinePolicy?: boolean;
}

/** What the processor answers for a stored payment when the terminal forwards it. */
export type ForwardDecision = 'approved' | 'declined' | 'expired';

export interface StoredPayment {
  reference: string;
  charge: Charge;
  storedAt: number;
  /** The forward result sent and not acknowledged yet. */
  pending?: ForwardResult;
  /** The outcome posd acknowledged: the terminal may forget the payment. */
  done?: ForwardResult['outcome'];
}

export type SimulatorEvents = {
  connected: [];
  welcome: [Welcome];
  rejected: [ErrorMessage];
  received: [ServerMessage];
  sent: [TerminalMessage];
  charge: [Charge];
  cancel: [Cancel];
  status_request: [StatusRequest];
  result_ack: [ResultAck];
  offline_policy: [OfflinePolicy];
  forward_ack: [ForwardAck];
  stored: [StoredPayment];
  stage: [{ command_id: string; stage: Stage }];
  invalid: [LinkInvalid];
  disconnected: [LinkDown];
  connect_failed: [{ error: string }];
  garbage_sent: [{ count: number }];
  /** Every other event, for a log: the CLI prints these as JSON lines. */
  event: [{ event: string; data: unknown }];
};

interface Running {
  charge: Charge;
  stage: Stage;
  timer?: TimerHandle;
}

export class TerminalSimulator extends EventEmitter<SimulatorEvents> {
  readonly behaviour: BehaviourName;
  private readonly delays: StageDelays;
  private readonly clock: Clock;
  private link: TerminalSideLink | undefined;
  private current: Running | undefined;
  /** Results posd has not acknowledged yet: kept across reconnects until result_ack. */
  private readonly unacked = new Map<string, Result>();
  /** Recent acknowledged results, so a late status_request still gets the truth. */
  private readonly history = new Map<string, Result>();
  private serial = 0;
  private droppedOnce = false;
  private stopped = false;
  private reconnectTimer: TimerHandle | undefined;
  private offline: boolean;
  private policy: OfflinePolicy | undefined;
  /** Stored payments by reference, kept until posd acknowledged their final forward result. */
  readonly storedPayments = new Map<string, StoredPayment>();

  constructor(private readonly opts: SimulatorOptions) {
    super();
    // forward() waits for one forward_ack per stored payment at once (a hundred after a long outage).
    this.setMaxListeners(0);
    this.behaviour = opts.behaviour ?? 'approve';
    const base = this.behaviour === 'slow' ? SLOW_DELAYS : DEFAULT_DELAYS;
    this.delays = { ...base, ...opts.delays };
    this.clock = opts.clock ?? realClock();
    this.offline = opts.offline ?? false;
  }

  get protocol(): number {
    return this.opts.protocol ?? PROTOCOL_VERSION;
  }

  /** The last offline_policy posd sent (version 2). */
  get offlinePolicy(): OfflinePolicy | undefined {
    return this.policy;
  }

  /** Loses or regains the processor; charges taken while offline are stored (version 2). */
  setOffline(offline: boolean): void {
    this.offline = offline;
  }

  /**
   * Forwards every stored payment not yet settled: the processor answers each as `decide` says
   * (approved when omitted). With `announce`, a `forwarded` result goes first; with `twice`, each
   * final result is sent a second time at once. Resolves once posd
   * has acknowledged every final result.
   */
  async forward(decide: (p: StoredPayment) => ForwardDecision = () => 'approved', opts: { announce?: boolean; twice?: boolean } = {}): Promise<void> {
    const open = [...this.storedPayments.values()].filter((p) => !p.done);
    const acks: Promise<unknown>[] = [];
    for (const p of open) {
      const base = { type: 'forward_result' as const, offline_reference: p.reference, command_id: p.charge.command_id };
      if (opts.announce) await this.send({ ...base, outcome: 'forwarded', authorization_code: null, card: null, processor_reference: null, reason: null });
      const outcome = decide(p);
      const serial = ++this.serial;
      p.pending = {
        ...base,
        outcome,
        authorization_code: outcome === 'approved' ? String(100_000 + (serial % 900_000)) : null,
        card: { network: 'visa', last4: '4242' },
        processor_reference: `sim-${this.opts.terminalId}-${serial}`,
        reason: outcome === 'declined' ? 'insufficient_funds' : outcome === 'expired' ? 'too_old' : null,
      };
      acks.push(this.waitFor('forward_ack', (a) => a.offline_reference === p.reference && a.outcome === outcome));
      await this.send(p.pending);
      // A terminal that did not trust its first send (say, it lost the ack): posd must apply it once.
      if (opts.twice) await this.send(p.pending);
    }
    await Promise.all(acks);
  }

  get unacknowledgedResults(): Result[] {
    return [...this.unacked.values()];
  }

  get currentStage(): Stage | undefined {
    return this.current?.stage;
  }

  get connected(): boolean {
    return !!this.link && !this.link.isDown;
  }

  /** Connects and says hello; resolves on welcome, rejects when posd refuses. */
  async start(): Promise<Welcome> {
    this.stopped = false;
    const welcome = this.waitFor('welcome');
    const rejected = this.waitFor('rejected').then((e) => Promise.reject(Object.assign(new Error(`refused: ${e.code}`), { refused: e.code })));
    void this.connect();
    return Promise.race([welcome, rejected]);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.reconnectTimer);
    this.clock.clearTimeout(this.current?.timer);
    await this.link?.close('simulator stopped');
  }

  /** Resolves with the next `event` that matches `pred`. Call before triggering it. */
  waitFor<K extends keyof SimulatorEvents>(event: K, pred: (v: SimulatorEvents[K][0]) => boolean = () => true): Promise<SimulatorEvents[K][0]> {
    return new Promise((resolve) => {
      const on = (...args: unknown[]) => {
        const v = args[0] as SimulatorEvents[K][0];
        if (!pred(v)) return;
        (this as EventEmitter).off(event, on);
        resolve(v);
      };
      (this as EventEmitter).on(event, on);
    });
  }

  private note<K extends Exclude<keyof SimulatorEvents, 'event'>>(event: K, ...args: SimulatorEvents[K]): void {
    // The log line goes first so a listener that reacts (say, exits on `rejected`) cannot reorder it.
    this.emit('event', { event, data: args[0] ?? null });
    (this as EventEmitter).emit(event, ...args);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    let link: TerminalSideLink;
    try {
      link = await this.opts.connect();
    } catch (err) {
      this.note('connect_failed', { error: (err as Error).message });
      return this.scheduleReconnect();
    }
    if (this.stopped) return void link.close();
    this.link = link;
    link.on('message', (m) => this.onMessage(link, m));
    link.on('invalid', (i) => this.note('invalid', i));
    link.once('down', (d) => {
      if (this.link === link) this.link = undefined;
      this.note('disconnected', d);
      if (!d.closedLocally) this.scheduleReconnect();
    });
    this.note('connected');
    const replay = this.opts.replayResults ?? 'both';
    await this.send({
      type: 'hello',
      terminal_id: this.opts.terminalId,
      token: this.opts.token,
      model: this.opts.model ?? 'posd-sim',
      firmware: this.opts.firmware ?? '1.0.0',
      protocol: this.protocol,
      current_command_id: this.current?.charge.command_id ?? null,
      unacknowledged_results: replay === 'result' ? [] : this.unacknowledgedResults.map(({ type: _t, ...body }) => body),
    });
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    this.clock.clearTimeout(this.reconnectTimer);
    this.reconnectTimer = this.clock.setTimeout(() => void this.connect(), this.opts.reconnectDelayMs ?? 1_000);
  }

  private async send(msg: TerminalMessage): Promise<void> {
    const link = this.link;
    if (!link) return;
    try {
      await link.send(msg);
      this.note('sent', msg);
    } catch {
      // The link's own down event drives reconnection; a lost send is replayed from state.
    }
  }

  private onMessage(link: TerminalSideLink, msg: ServerMessage): void {
    this.note('received', msg);
    switch (msg.type) {
      case 'welcome':
        this.note('welcome', msg);
        if ((this.opts.replayResults ?? 'both') !== 'hello') for (const r of this.unacked.values()) void this.send(r);
        // Forward results posd never acknowledged are sent again; posd treats a repeat as known.
        for (const p of this.storedPayments.values()) if (p.pending && !p.done) void this.send(p.pending);
        return;
      case 'offline_policy':
        this.policy = msg;
        this.note('offline_policy', msg);
        return;
      case 'forward_ack': {
        const p = this.storedPayments.get(msg.offline_reference);
        if (p && p.pending?.outcome === msg.outcome && msg.outcome !== 'forwarded') {
          p.done = msg.outcome;
          p.pending = undefined;
        }
        this.note('forward_ack', msg);
        return;
      }
      case 'error':
        this.note('rejected', msg);
        // posd closes after an error; a terminal with a bad token must not hammer it.
        this.stopped = true;
        void link.close('refused');
        return;
      case 'charge':
        this.note('charge', msg);
        return this.onCharge(msg);
      case 'cancel':
        this.note('cancel', msg);
        return this.onCancel(msg);
      case 'status_request':
        this.note('status_request', msg);
        return this.onStatus(msg.command_id);
      case 'result_ack':
        if (this.unacked.has(msg.command_id)) {
          this.history.set(msg.command_id, this.unacked.get(msg.command_id)!);
          this.unacked.delete(msg.command_id);
          if (this.history.size > 100) this.history.delete(this.history.keys().next().value!);
        }
        this.note('result_ack', msg);
        return;
    }
  }

  private onCharge(charge: Charge): void {
    if (this.behaviour === 'never_answer') return;
    const id = charge.command_id;
    // A repeated charge (serial resend, posd re-dispatch after reconnect) is answered, not rerun.
    if (this.current?.charge.command_id === id) {
      void this.send({ type: 'ack', command_id: id }).then(() => this.send({ type: 'progress', command_id: id, stage: this.current?.stage ?? 'waiting_card' }));
      return;
    }
    const stored = this.unacked.get(id) ?? this.history.get(id);
    if (stored) return void this.send(stored);
    if (this.current) return void this.send({ type: 'ack', command_id: id }).then(() => this.finish(errorResult(id, 'busy')));
    this.current = { charge, stage: 'waiting_card' };
    void (async () => {
      if (this.behaviour === 'garbage') await this.sendGarbage();
      await this.send({ type: 'ack', command_id: id });
      this.enterStage(0);
    })();
  }

  private enterStage(index: number): void {
    const run = this.current;
    if (!run) return;
    const stage = STAGES[index];
    run.stage = stage;
    this.note('stage', { command_id: run.charge.command_id, stage });
    const sent = this.send({ type: 'progress', command_id: run.charge.command_id, stage });
    if (stage === 'authorizing' && this.behaviour === 'disconnect_while_authorizing' && !this.droppedOnce) {
      // The terminal keeps authorizing while its link is gone; posd learns the outcome on reconnect.
      this.droppedOnce = true;
      const link = this.link;
      void sent.then(() => link?.close('simulated disconnect')).then(() => this.scheduleReconnect());
    }
    run.timer = this.clock.setTimeout(() => {
      if (this.current !== run) return;
      if (index + 1 < STAGES.length) this.enterStage(index + 1);
      else this.finish(this.outcomeOf(run.charge));
    }, this.delays[stage]);
  }

  /** Online: the processor's answer. Offline (version 2): stored when the policy allows it, else declined. */
  private outcomeOf(charge: Charge): Result {
    const serial = ++this.serial;
    if (!this.offline || this.protocol < 2) return finalResult(this.behaviour, charge, this.opts.terminalId, serial);
    const p = this.policy;
    const fits = !!p && p.allowed && p.currency === charge.currency && charge.amount_in_cents <= p.max_payment_in_cents && p.remaining_count > 0;
    if (!fits && !this.opts.ignoreOfflinePolicy) {
      return {
        type: 'result',
        command_id: charge.command_id,
        outcome: 'declined',
        authorization_code: null,
        card: null,
        processor_reference: null,
        reason: 'offline_not_allowed',
      };
    }
    const reference = `off-${this.opts.terminalId}-${serial}`;
    const stored: StoredPayment = { reference, charge, storedAt: this.clock.now() };
    this.storedPayments.set(reference, stored);
    this.note('stored', stored);
    return {
      type: 'result',
      command_id: charge.command_id,
      outcome: 'stored',
      authorization_code: null,
      card: { network: 'visa', last4: '4242' },
      processor_reference: null,
      reason: null,
      offline_reference: reference,
    };
  }

  private finish(result: Result): void {
    if (this.current?.charge.command_id === result.command_id) {
      this.clock.clearTimeout(this.current.timer);
      this.current = undefined;
    }
    this.unacked.set(result.command_id, result);
    void this.send(result);
  }

  private onCancel(cancel: Cancel): void {
    const id = cancel.command_id;
    if (this.current?.charge.command_id === id) {
      if (this.behaviour === 'ignore_cancel') return;
      // From authorizing on, the processor may already have the charge: the real outcome follows.
      if (this.current.stage === 'authorizing') return;
      return this.finish(canceledResult(id));
    }
    const stored = this.unacked.get(id) ?? this.history.get(id);
    void this.send(stored ?? errorResult(id, 'unknown_command'));
  }

  private onStatus(id: string): void {
    if (this.current?.charge.command_id === id) {
      return void this.send({ type: 'progress', command_id: id, stage: this.current.stage });
    }
    const stored = this.unacked.get(id) ?? this.history.get(id);
    void this.send(stored ?? errorResult(id, 'unknown_command'));
  }

  /** Malformed JSON, an unknown type, a message with a bad field, and on serial a bad-LRC frame. */
  private async sendGarbage(): Promise<void> {
    const link = this.link;
    if (!link) return;
    const payloads = ['{"type":"ack",', '{"type":"frobnicate","x":1}', '{"type":"progress","command_id":"x","stage":"dancing"}'];
    const raw = (s: string) => (link.transport === 'serial' ? framePayload(Buffer.from(s)) : s);
    for (const p of payloads) await link.writeRaw(raw(p)).catch(() => {});
    if (link.transport === 'serial') {
      const bad = framePayload(Buffer.from('{"type":"ack","command_id":"bad-lrc"}'));
      bad[bad.length - 1] ^= 0x5a;
      await link.writeRaw(Buffer.concat([Buffer.from('noise'), bad])).catch(() => {});
    }
    this.note('garbage_sent', { count: payloads.length + (link.transport === 'serial' ? 1 : 0) });
  }
}
