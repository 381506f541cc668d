/**
 * The transport-neutral terminal link: what src/terminals/ drives, whether the terminal speaks
 * WebSocket or serial. One link is one session: after `down` it never comes back; the transport
 * layer hands out a new link when the terminal reconnects.
 */
import { EventEmitter } from 'node:events';
import { realClock, type Clock, type TimerHandle } from './clock.js';
import type { FrameFault } from './protocol/frame-parser.js';
import { decodeMessage, type MessageInvalid, type MessageParser } from './protocol/parse.js';
import type { ServerMessage, TerminalMessage } from './protocol/messages.js';

/** Why a link went down; flags by meaning, as node-serialport does. */
/** The transports a link may run over: posd's own two, and nexo (Terminal API, local: devices/nexo/). */
export type LinkTransport = 'websocket' | 'serial' | 'nexo';

export interface LinkDown {
  /** The peer or the medium went away (socket closed, port closed or unplugged). */
  disconnected?: true;
  /** A serial frame went unacknowledged after every resend. */
  noAck?: true;
  /** The peer stopped answering pings. */
  missedPings?: true;
  /** This side closed the link on purpose. */
  closedLocally?: true;
  /** Closed by this side because the peer stayed over its frame budget (`FrameBudget`). */
  flooded?: true;
  detail: string;
  error?: Error;
}

export interface LinkInvalid extends Partial<MessageInvalid> {
  detail: string;
  /** Set for serial framing faults (bad LRC, noise, oversized or cut frames). */
  framing?: FrameFault;
  /** The start of the offending input, for logs. */
  sample?: string;
}

export type LinkErrorFlags = { linkDown?: true; noAck?: true; oversized?: true };

/** The one error type a link's `send` rejects with; inspect the flags, not the message. */
export class LinkError extends Error {
  readonly linkDown?: true;
  readonly noAck?: true;
  readonly oversized?: true;
  constructor(message: string, flags: LinkErrorFlags) {
    super(message);
    this.name = 'LinkError';
    Object.assign(this, flags);
  }
}

export type LinkEventMap<In> = {
  message: [In];
  invalid: [LinkInvalid];
  down: [LinkDown];
};

export interface TerminalLink<In extends { type: string }, Out extends { type: string }> extends EventEmitter<LinkEventMap<In>> {
  readonly transport: LinkTransport;
  readonly isDown: boolean;
  /** Valid messages received so far, pings and pongs included: proof the peer is really there. */
  readonly messagesReceived: number;
  /** Resolves once the link went down, with why. */
  readonly whenDown: Promise<LinkDown>;
  /**
   * WebSocket: resolves once written. Serial: resolves once the peer answered ACK. Rejects with a
   * LinkError when the link is (or goes) down first.
   */
  send(msg: Out): Promise<void>;
  /** Ends the session; `down` fires with `closedLocally`. */
  close(detail?: string): Promise<void>;
  /** Writes bytes or text as they are, bypassing encoding. For simulators and tests only. */
  writeRaw(data: Buffer | string): Promise<void>;
}

/** posd's view: receives terminal messages, sends server messages. */
export type ServerLink = TerminalLink<TerminalMessage, ServerMessage>;
/** A terminal's view (the simulator). */
export type TerminalSideLink = TerminalLink<ServerMessage, TerminalMessage>;

/**
 * What a peer may send (docs/terminal-protocol.md, "Frame budget"): frames and bytes per second. A
 * frame over it is dropped unread and the link stops reading until the second ends (slowed: a
 * WebSocket's TCP window closes, a serial peer's unacknowledged frame is resent later); a peer over
 * it in `closeAfterSeconds` seconds in a row is closed (WebSocket close code `LINK_CLOSE_FLOOD`).
 * A flooding terminal used to take the box's event loop: 330,000 frames in 15 s pushed
 * `GET /api/account` to a p50 of 220-425 ms.
 */
export interface FrameBudget {
  framesPerSecond: number;
  bytesPerSecond: number;
  closeAfterSeconds: number;
}

/** The WebSocket close code of a link closed for staying over its frame budget. */
export const LINK_CLOSE_FLOOD = 4008;

export interface LinkOptions<In> {
  parse: MessageParser<In>;
  /** Absent: no budget (the terminal side, tests of the framing). */
  budget?: FrameBudget;
  clock?: Clock;
  /** Interval between pings; 10 s per the protocol. 0 disables keepalive. */
  pingIntervalMs?: number;
  /** Pings sent without any answer before the link is declared down; 3 per the protocol. */
  maxMissedPings?: number;
}

const MAX_BUFFERED = 256;

/** Shared behaviour of both transports: decoding, keepalive, buffering and the down latch. */
export abstract class BaseLink<In extends { type: string }, Out extends { type: string }>
  extends EventEmitter<LinkEventMap<In>>
  implements TerminalLink<In, Out>
{
  abstract readonly transport: LinkTransport;
  readonly whenDown: Promise<LinkDown>;
  protected readonly clock: Clock;
  private readonly parse: MessageParser<In>;
  private readonly pingIntervalMs: number;
  private readonly maxMissedPings: number;
  private pingTimer: TimerHandle | undefined;
  private missed = 0;
  private downReason: LinkDown | undefined;
  private resolveDown!: (d: LinkDown) => void;
  private readonly buffered: In[] = [];
  private received = 0;
  private readonly budget: FrameBudget | undefined;
  /** The budget's current one-second window, what it counted, and the last windows found over it. */
  private window = { index: -1, frames: 0, bytes: 0 };
  private over = { index: -2, seconds: 0 };
  private resumeTimer: TimerHandle | undefined;

  constructor(opts: LinkOptions<In>) {
    super();
    this.parse = opts.parse;
    this.clock = opts.clock ?? realClock();
    this.pingIntervalMs = opts.pingIntervalMs ?? 10_000;
    this.maxMissedPings = opts.maxMissedPings ?? 3;
    this.budget = opts.budget;
    this.whenDown = new Promise((r) => (this.resolveDown = r));
    // Messages that arrive before anyone listens (say, right after a handshake resolves) are held
    // and replayed to the first listener instead of being lost.
    (this as EventEmitter).on('newListener', (event: string | symbol) => {
      if (event === 'message' && this.buffered.length > 0) queueMicrotask(() => this.drainBuffered());
    });
  }

  get messagesReceived(): number {
    return this.received;
  }

  get isDown(): boolean {
    return this.downReason !== undefined;
  }

  async send(msg: Out): Promise<void> {
    if (this.downReason) throw new LinkError(`link is down: ${this.downReason.detail}`, { linkDown: true });
    return this.writeMessage(msg);
  }

  async close(detail = 'closed locally'): Promise<void> {
    if (this.downReason) return;
    this.goDown({ closedLocally: true, detail });
    await this.closeTransport();
  }

  abstract writeRaw(data: Buffer | string): Promise<void>;
  protected abstract writeMessage(msg: Out): Promise<void>;
  /** `code`: the WebSocket close code (1000 unless the link is closed for a reason with its own). */
  protected abstract closeTransport(code?: number): Promise<void>;
  /** Stops reading from the peer for `ms` (the rest of a budget's second). */
  protected abstract pauseReading(ms: number): void;

  /**
   * Counts one frame received (`bytes` long) against the budget; false: drop it unread. Over the
   * budget the link pauses reading until the second ends; over it in `closeAfterSeconds` seconds in
   * a row, the link goes down (`flooded`) and is closed with LINK_CLOSE_FLOOD.
   */
  protected admitFrame(bytes: number): boolean {
    if (this.downReason) return false;
    const b = this.budget;
    if (!b) return true;
    const now = this.clock.now();
    const index = Math.floor(now / 1000);
    if (index !== this.window.index) this.window = { index, frames: 0, bytes: 0 };
    this.window.frames++;
    this.window.bytes += bytes;
    if (this.window.frames <= b.framesPerSecond && this.window.bytes <= b.bytesPerSecond) return true;
    if (this.over.index === index) return false;
    this.over = { index, seconds: this.over.index === index - 1 ? this.over.seconds + 1 : 1 };
    if (this.over.seconds >= b.closeAfterSeconds) {
      this.goDown({
        flooded: true,
        closedLocally: true,
        detail: `over its frame budget (${b.framesPerSecond} frames, ${b.bytesPerSecond} bytes a second) for ${this.over.seconds} seconds in a row`,
      });
      void this.closeTransport(LINK_CLOSE_FLOOD);
      return false;
    }
    this.pauseReading(1000 - (now % 1000));
    return false;
  }

  /** Transports call this from `pauseReading`: `resume` runs when the second is over, unless the link went down. */
  protected resumeAfter(ms: number, resume: () => void): void {
    this.clock.clearTimeout(this.resumeTimer);
    this.resumeTimer = this.clock.setTimeout(() => {
      if (!this.downReason) resume();
    }, ms);
  }

  /** Subclasses call this once the transport is usable. */
  protected startKeepalive(): void {
    if (this.pingIntervalMs > 0) this.schedulePing();
  }

  private schedulePing(): void {
    this.pingTimer = this.clock.setTimeout(() => {
      if (this.downReason) return;
      if (this.missed >= this.maxMissedPings) {
        this.goDown({ missedPings: true, detail: `${this.missed} pings without an answer` });
        void this.closeTransport();
        return;
      }
      this.missed++;
      // A failed ping write surfaces through the transport's own down path.
      this.send({ type: 'ping' } as unknown as Out).catch(() => {});
      this.schedulePing();
    }, this.pingIntervalMs);
  }

  /** Feeds one decoded-to-text message from the transport. */
  protected receiveText(text: string): void {
    if (this.downReason) return;
    const res = decodeMessage(text, this.parse);
    if (!res.ok) {
      this.emit('invalid', { ...res.error, sample: text.slice(0, 200) });
      return;
    }
    // Any valid traffic proves the peer alive; a pong is simply the least of it.
    this.missed = 0;
    this.received++;
    const msg = res.message;
    if (msg.type === 'ping') {
      this.send({ type: 'pong' } as unknown as Out).catch(() => {});
      return;
    }
    if (msg.type === 'pong') return;
    if (this.listenerCount('message') === 0) {
      if (this.buffered.length < MAX_BUFFERED) this.buffered.push(msg);
      else this.emit('invalid', { detail: 'message dropped: nobody listening', type: msg.type });
      return;
    }
    this.emit('message', msg);
  }

  private drainBuffered(): void {
    while (this.buffered.length > 0 && this.listenerCount('message') > 0) {
      this.emit('message', this.buffered.shift()!);
    }
  }

  protected goDown(reason: LinkDown): void {
    if (this.downReason) return;
    this.downReason = reason;
    this.clock.clearTimeout(this.pingTimer);
    this.clock.clearTimeout(this.resumeTimer);
    this.onDown(reason);
    this.resolveDown(reason);
    this.emit('down', reason);
  }

  /** Hook for transports to fail pending work before listeners hear `down`. */
  protected onDown(_reason: LinkDown): void {}
}
