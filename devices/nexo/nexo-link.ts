/**
 * A nexo terminal as a posd link: the bridge (src/modules/terminals/link/) sends it posd's own
 * messages and hears posd's own answers, so the command machine, the cancel rule and the recovery
 * rules are the same as on WebSocket and serial. Here each is turned into nexo requests:
 *
 * - `charge` → PaymentRequest (SaleTransactionID = command id); its PaymentResponse → `result`.
 *   A TransactionStatusRequest `ackProbeMs` later answering InProgress → `ack` (the terminal holds it).
 * - `cancel` → AbortRequest. Nothing is confirmed by it: the payment's own answer says `Aborted`
 *   (→ `canceled`) or the real outcome (a cancel too late in authorization).
 * - `status_request` → TransactionStatusRequest: the kept answer → `result`, InProgress → `ack`,
 *   NotFound → `result` error `unknown_command` (the bridge's "never held" rule).
 * - A lost answer (connection dropped, timeout) → TransactionStatusRequest until it is known; never
 *   a second PaymentRequest from here.
 * - Health: a DiagnosisRequest every `healthIntervalMs` in place of pings; `maxMissedHealth`
 *   unanswered in a row, or an answer under another key, take the link down.
 * - A payment the terminal approved offline (`offline=true`) → `result` `stored`. Every
 *   `storedPollMs` each of this terminal's stored payments still waiting (`storedPayments`) is asked
 *   for by TransactionStatusRequest; once its kept answer is no longer offline → `forward_result`.
 *
 * `openNexoLink` runs the recovery a WebSocket terminal does with its hello: before the link exists,
 * every command posd may have handed this terminal is asked for by TransactionStatusRequest, and
 * the hello it then reports names what the terminal kept.
 */
import { realClock, type Clock, type TimerHandle } from '../clock.js';
import { BaseLink, type LinkDown } from '../link.js';
import { parseTerminalMessage } from '../protocol/parse.js';
import type { Charge, Hello, Result, ServerMessage, TerminalMessage } from '../protocol/messages.js';
import { isKeyProblem, type NexoClient } from './client.js';
import {
  abortRequest,
  diagnosisRequest,
  forwardOfStatus,
  paymentRequest,
  resultOfPayment,
  statusAnswer,
  transactionStatusRequest,
  type NexoDiagnosisResponse,
  type NexoPaymentResponse,
  type NexoTransactionStatusResponse,
  type StatusAnswer,
} from './messages.js';

export interface NexoLinkOptions {
  client: NexoClient;
  terminalId: string;
  clock?: Clock;
  /** How long a PaymentRequest may wait for its answer (a card flow takes minutes). */
  paymentTimeoutMs?: number;
  /** Status, abort and diagnosis requests. */
  requestTimeoutMs?: number;
  /** DiagnosisRequest period; 0 disables. */
  healthIntervalMs?: number;
  maxMissedHealth?: number;
  /** After a PaymentRequest is sent, when to ask whether the terminal holds it. */
  ackProbeMs?: number;
  /** Period of TransactionStatusRequests for a payment whose answer was lost. */
  statusPollMs?: number;
  /** This terminal's payments approved offline whose outcome posd still waits for (read at each round). */
  storedPayments?: () => ReadonlyArray<{ commandId: string; offlineReference: string }>;
  /** Period of the TransactionStatusRequests that learn what became of them; 0 disables. */
  storedPollMs?: number;
}

/** The terminal could not be reached, or answered under another key: the link is not opened. */
export class NexoOpenError extends Error {
  constructor(
    message: string,
    readonly wrongKey: boolean,
  ) {
    super(message);
    this.name = 'NexoOpenError';
  }
}

function describe(err: unknown): string {
  const e = err as Error & { code?: string; cause?: { code?: string; message?: string } };
  return [e?.name, e?.code ?? e?.cause?.code, e?.message].filter(Boolean).join(' ').slice(0, 300);
}

async function askStatus(o: Required<Pick<NexoLinkOptions, 'client' | 'requestTimeoutMs'>>, commandId: string): Promise<StatusAnswer> {
  const answer = await o.client.post(transactionStatusRequest(o.client.parties, commandId), o.requestTimeoutMs);
  const r = (answer?.SaleToPOIResponse as Record<string, unknown> | undefined)?.TransactionStatusResponse as NexoTransactionStatusResponse | undefined;
  if (!r?.Response) return { kind: 'retry', detail: 'no TransactionStatusResponse in the answer' };
  return statusAnswer(commandId, r);
}

async function diagnose(o: Required<Pick<NexoLinkOptions, 'client' | 'requestTimeoutMs'>>): Promise<NexoDiagnosisResponse> {
  const answer = await o.client.post(diagnosisRequest(o.client.parties), o.requestTimeoutMs);
  const r = (answer?.SaleToPOIResponse as Record<string, unknown> | undefined)?.DiagnosisResponse as NexoDiagnosisResponse | undefined;
  if (!r?.Response) throw new Error('no DiagnosisResponse in the answer');
  return r;
}

/**
 * Reaches the terminal (DiagnosisRequest), learns what became of every command in `offered` (the
 * open commands posd handed it) and opens the link, whose first message is the hello that reports it.
 */
export async function openNexoLink(opts: NexoLinkOptions, offered: readonly string[]): Promise<NexoLink> {
  const o = { client: opts.client, requestTimeoutMs: opts.requestTimeoutMs ?? 10_000 };
  try {
    // Any answer under our key will do: a terminal busy with a payment (after a crash) may say Busy.
    await diagnose(o);
  } catch (err) {
    throw new NexoOpenError(`terminal not reached: ${describe(err)}`, isKeyProblem(err));
  }
  const results: Result[] = [];
  const inProgress: string[] = [];
  for (const id of offered) {
    let a: StatusAnswer;
    try {
      a = await askStatus(o, id);
    } catch (err) {
      throw new NexoOpenError(`status of ${id} not learned: ${describe(err)}`, isKeyProblem(err));
    }
    if (a.kind === 'result') results.push(a.result);
    else if (a.kind === 'in_progress') inProgress.push(id);
    // Not knowing is not "not held": open later, when the terminal can say.
    else if (a.kind === 'retry') throw new NexoOpenError(`status of ${id} not learned: ${a.detail}`, false);
  }
  const link = new NexoLink(opts);
  for (const id of inProgress) link.watch(id);
  const poiid = opts.client.parties.poiid;
  const hello: Hello = {
    type: 'hello',
    terminal_id: opts.terminalId,
    // Not checked for nexo: posd opened this link itself, to the registered address, under the key.
    token: 'nexo',
    model: poiid.split('-')[0].slice(0, 128),
    firmware: '',
    protocol: 1,
    current_command_id: inProgress[0] ?? null,
    unacknowledged_results: results.map(({ type: _t, ...r }) => r),
  };
  link.feed(hello);
  return link;
}

export class NexoLink extends BaseLink<TerminalMessage, ServerMessage> {
  readonly transport = 'nexo' as const;
  private readonly o: Required<Omit<NexoLinkOptions, 'clock' | 'terminalId'>>;
  private storedTimer: TimerHandle | undefined;
  /** PaymentRequests waiting for their answer, by command id. */
  private readonly inflight = new Map<string, AbortController>();
  /** Commands whose payment answer was lost (or is being recovered), polled by TransactionStatusRequest. */
  private readonly watched = new Map<string, TimerHandle>();
  private readonly timers = new Set<TimerHandle>();
  private healthTimer: TimerHandle | undefined;
  private missedHealth = 0;

  constructor(opts: NexoLinkOptions) {
    // Keepalive is the DiagnosisRequest below, not posd's ping message.
    super({ parse: parseTerminalMessage, clock: opts.clock ?? realClock(), pingIntervalMs: 0 });
    this.o = {
      client: opts.client,
      paymentTimeoutMs: opts.paymentTimeoutMs ?? 180_000,
      requestTimeoutMs: opts.requestTimeoutMs ?? 10_000,
      healthIntervalMs: opts.healthIntervalMs ?? 10_000,
      maxMissedHealth: opts.maxMissedHealth ?? 3,
      ackProbeMs: opts.ackProbeMs ?? 1_000,
      statusPollMs: opts.statusPollMs ?? 2_000,
      storedPayments: opts.storedPayments ?? (() => []),
      storedPollMs: opts.storedPollMs ?? 60_000,
    };
    this.scheduleHealth();
    this.scheduleStored();
  }

  /**
   * The terminal's client while the link is up: refunds (devices/nexo/refunds.ts) go over it, so
   * they stop when the link goes down and resume with the next opening.
   */
  get refundClient(): NexoClient | undefined {
    return this.isDown ? undefined : this.o.client;
  }

  /** A message from the terminal's side, through the same parser and counters as the other transports. */
  feed(msg: TerminalMessage): void {
    this.receiveText(JSON.stringify(msg));
  }

  protected async writeMessage(msg: ServerMessage): Promise<void> {
    switch (msg.type) {
      case 'charge':
        this.startPayment(msg);
        return;
      case 'cancel':
        this.abort(msg.command_id);
        return;
      case 'status_request':
        void this.status(msg.command_id, false);
        return;
      case 'error':
        await this.close(`refused: ${msg.code}`);
        return;
      default:
        // welcome, result_ack, pings, offline policies: nexo has nothing to carry them.
        return;
    }
  }

  writeRaw(): Promise<void> {
    return Promise.resolve();
  }

  protected pauseReading(): void {}

  protected async closeTransport(): Promise<void> {
    await this.o.client.close().catch(() => {});
  }

  protected onDown(_reason: LinkDown): void {
    this.clock.clearTimeout(this.healthTimer);
    this.clock.clearTimeout(this.storedTimer);
    for (const t of this.timers) this.clock.clearTimeout(t);
    for (const t of this.watched.values()) this.clock.clearTimeout(t);
    this.timers.clear();
    this.watched.clear();
    // The terminal goes on with a payment whose request we drop; the next open asks for its status.
    for (const ac of this.inflight.values()) ac.abort();
    this.inflight.clear();
    void this.o.client.close().catch(() => {});
  }

  private later(fn: () => void, ms: number): void {
    const t = this.clock.setTimeout(() => {
      this.timers.delete(t);
      if (!this.isDown) fn();
    }, ms);
    this.timers.add(t);
  }

  private failed(err: unknown, what: string): void {
    if (this.isDown) return;
    if (isKeyProblem(err)) {
      this.goDown({ disconnected: true, detail: `${what}: the terminal's key differs from posd's (${describe(err)})`, error: err as Error });
      void this.closeTransport();
    }
  }

  private startPayment(charge: Charge): void {
    const id = charge.command_id;
    if (this.inflight.has(id) || this.watched.has(id)) return;
    const ac = new AbortController();
    this.inflight.set(id, ac);
    this.later(() => {
      if (this.inflight.has(id)) void this.status(id, true);
    }, this.o.ackProbeMs);
    this.o.client.post(paymentRequest(this.o.client.parties, charge, new Date(this.clock.now())), this.o.paymentTimeoutMs, ac.signal).then(
      (answer) => {
        this.inflight.delete(id);
        if (this.isDown) return;
        const r = (answer?.SaleToPOIResponse as Record<string, unknown> | undefined)?.PaymentResponse as NexoPaymentResponse | undefined;
        const tx = r?.SaleData?.SaleTransactionID?.TransactionID;
        if (!r?.Response || (tx !== undefined && tx !== id)) {
          this.watch(id);
          return;
        }
        this.feed(resultOfPayment(id, r));
      },
      (err) => {
        this.inflight.delete(id);
        if (this.isDown) return;
        if (isKeyProblem(err)) return this.failed(err, 'payment');
        // The answer is lost, not the payment: learn it from the terminal before anything else.
        this.watch(id);
      },
    );
  }

  private abort(commandId: string): void {
    this.o.client.post(abortRequest(this.o.client.parties, commandId), this.o.requestTimeoutMs).catch((err) => this.failed(err, 'abort'));
  }

  /** Polls TransactionStatusRequest for a payment whose answer was lost, until the terminal says. */
  watch(commandId: string): void {
    if (this.isDown || this.watched.has(commandId)) return;
    const poll = () => {
      void this.status(commandId, true).then((a) => {
        if (this.isDown || !this.watched.has(commandId)) return;
        if (a?.kind === 'result' || a?.kind === 'not_found') {
          this.watched.delete(commandId);
          return;
        }
        this.watched.set(commandId, this.clock.setTimeout(poll, this.o.statusPollMs));
      });
    };
    this.watched.set(commandId, this.clock.setTimeout(poll, 0));
  }

  /**
   * One TransactionStatusRequest, its answer fed as posd's messages. `quiet`: a probe of our own,
   * where NotFound is reported only for a payment whose request is no longer open.
   */
  private async status(commandId: string, quiet: boolean): Promise<StatusAnswer | undefined> {
    let a: StatusAnswer;
    try {
      a = await askStatus(this.o, commandId);
    } catch (err) {
      this.failed(err, 'status');
      return undefined;
    }
    if (this.isDown) return a;
    if (a.kind === 'result') this.feed(a.result);
    else if (a.kind === 'in_progress') this.feed({ type: 'ack', command_id: commandId });
    else if (a.kind === 'not_found' && !this.inflight.has(commandId) && (!quiet || this.watched.has(commandId))) {
      this.feed({ type: 'result', command_id: commandId, outcome: 'error', reason: 'unknown_command' });
    }
    return a;
  }

  /**
   * One round: each stored payment still waiting is asked for, one after the other (a terminal
   * answers one request at a time); an outcome is fed as `forward_result`, which the bridge commits
   * before anything else. The list is read again each round, so a settled payment drops out.
   */
  private scheduleStored(): void {
    if (this.o.storedPollMs <= 0) return;
    this.storedTimer = this.clock.setTimeout(() => {
      if (this.isDown) return;
      void this.pollStored().finally(() => {
        if (!this.isDown) this.scheduleStored();
      });
    }, this.o.storedPollMs);
  }

  private async pollStored(): Promise<void> {
    let waiting: ReadonlyArray<{ commandId: string; offlineReference: string }>;
    try {
      waiting = this.o.storedPayments();
    } catch {
      return;
    }
    for (const { commandId, offlineReference } of waiting) {
      if (this.isDown) return;
      // Its own payment request still open (just stored): its answer is on its way.
      if (this.inflight.has(commandId)) continue;
      try {
        const answer = await this.o.client.post(transactionStatusRequest(this.o.client.parties, commandId), this.o.requestTimeoutMs);
        const r = (answer?.SaleToPOIResponse as Record<string, unknown> | undefined)?.TransactionStatusResponse as NexoTransactionStatusResponse | undefined;
        const forward = r?.Response ? forwardOfStatus(commandId, offlineReference, r) : null;
        if (forward && !this.isDown) this.feed(forward);
      } catch (err) {
        this.failed(err, 'status of a stored payment');
      }
    }
  }

  private scheduleHealth(): void {
    if (this.o.healthIntervalMs <= 0) return;
    this.healthTimer = this.clock.setTimeout(() => {
      if (this.isDown) return;
      diagnose(this.o).then(
        () => {
          if (this.isDown) return;
          // Any answer under our key is a live terminal, Busy included (one may be mid-payment).
          this.missedHealth = 0;
          // Counted as traffic: last_seen_at follows the terminal's answers.
          this.feed({ type: 'pong' });
          this.checkHealth();
        },
        (err) => {
          if (this.isDown) return;
          if (isKeyProblem(err)) return this.failed(err, 'diagnosis');
          this.missedHealth++;
          this.checkHealth();
        },
      );
    }, this.o.healthIntervalMs);
  }

  private checkHealth(): void {
    if (this.missedHealth >= this.o.maxMissedHealth) {
      this.goDown({ missedPings: true, detail: `${this.missedHealth} DiagnosisRequests without an answer` });
      void this.closeTransport();
      return;
    }
    this.scheduleHealth();
  }
}
