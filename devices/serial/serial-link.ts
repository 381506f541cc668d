/**
 * A TerminalLink over a byte stream (a serial port or anything shaped like one). Stop-and-wait:
 * one frame in flight, the next leaves after the peer's ACK. A NAK or 2 s of silence triggers a
 * resend, at most 3 times; then the link is down and every pending send rejects.
 *
 * There are no sequence numbers in protocol v1, so a frame whose ACK was lost arrives twice;
 * receivers must treat messages idempotently (they are keyed by command_id).
 */
import type { Duplex } from 'node:stream';
import { BaseLink, LinkError, type FrameBudget, type LinkDown, type LinkOptions, type ServerLink, type TerminalSideLink } from '../link.js';
import { ACK_BYTE, encodeFrame, FrameTooLargeError, NAK_BYTE } from '../protocol/frame.js';
import { FrameParser, type FrameToken } from '../protocol/frame-parser.js';
import { parseServerMessage, parseTerminalMessage } from '../protocol/parse.js';
import type { Clock, TimerHandle } from '../clock.js';

/** What a serial link needs from a port: a duplex byte stream, closable like node-serialport's. */
export type PortStream = Duplex & { close?: (cb?: (err?: Error | null) => void) => void; isOpen?: boolean };

export interface SerialTimingOptions {
  /** How long to wait for ACK/NAK before resending; 2 s per the protocol. */
  ackTimeoutMs?: number;
  /** Resends after the first transmission; 3 per the protocol. */
  maxResends?: number;
  clock?: Clock;
  pingIntervalMs?: number;
  maxMissedPings?: number;
  budget?: FrameBudget;
}

interface Outgoing {
  frame: Buffer;
  resolve: () => void;
  reject: (err: Error) => void;
  resends: number;
  timer?: TimerHandle;
}

export class SerialLink<In extends { type: string }, Out extends { type: string }> extends BaseLink<In, Out> {
  readonly transport = 'serial' as const;
  private readonly parser = new FrameParser();
  private readonly queue: Outgoing[] = [];
  private inFlight: Outgoing | undefined;
  private readonly ackTimeoutMs: number;
  private readonly maxResends: number;
  private readonly onData = (chunk: Buffer) => this.parser.write(chunk);
  private readonly onClose = (err?: Error & { disconnected?: boolean }) =>
    this.goDown({ disconnected: true, detail: err?.disconnected ? 'port disconnected' : 'port closed', error: err ?? undefined });

  constructor(
    private readonly port: PortStream,
    opts: LinkOptions<In> & SerialTimingOptions,
  ) {
    super(opts);
    this.ackTimeoutMs = opts.ackTimeoutMs ?? 2_000;
    this.maxResends = opts.maxResends ?? 3;
    this.parser.on('data', (t: FrameToken) => this.onToken(t));
    port.on('data', this.onData);
    port.on('close', this.onClose);
    // Write errors on a dying port are followed by 'close'; the listener keeps them from throwing.
    port.on('error', () => {});
    this.startKeepalive();
  }

  protected writeMessage(msg: Out): Promise<void> {
    let frame: Buffer;
    try {
      frame = encodeFrame(msg);
    } catch (err) {
      const flags = err instanceof FrameTooLargeError ? { oversized: true as const } : {};
      return Promise.reject(new LinkError((err as Error).message, flags));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ frame, resolve, reject, resends: 0 });
      this.pump();
    });
  }

  writeRaw(data: Buffer | string): Promise<void> {
    return new Promise((resolve, reject) => this.port.write(data, (err) => (err ? reject(new LinkError(err.message, { linkDown: true })) : resolve())));
  }

  private pump(): void {
    if (this.inFlight || this.isDown) return;
    this.inFlight = this.queue.shift();
    if (this.inFlight) this.transmit(this.inFlight);
  }

  private transmit(out: Outgoing): void {
    this.port.write(out.frame);
    out.timer = this.clock.setTimeout(() => this.retry(out, 'no answer'), this.ackTimeoutMs);
  }

  private retry(out: Outgoing, why: string): void {
    this.clock.clearTimeout(out.timer);
    if (out !== this.inFlight || this.isDown) return;
    if (out.resends >= this.maxResends) {
      this.goDown({ noAck: true, detail: `frame not acknowledged after ${out.resends} resends (${why})` });
      void this.closeTransport();
      return;
    }
    out.resends++;
    this.transmit(out);
  }

  private onToken(t: FrameToken): void {
    if (this.isDown) return;
    switch (t.kind) {
      case 'ack': {
        const out = this.inFlight;
        // A stray ACK (say, for a frame we resent and the peer acknowledged twice) is harmless.
        if (!out) return;
        this.clock.clearTimeout(out.timer);
        this.inFlight = undefined;
        out.resolve();
        this.pump();
        return;
      }
      case 'nak':
        if (this.inFlight) this.retry(this.inFlight, 'NAK');
        return;
      case 'frame':
        // Over the budget a frame is neither read nor acknowledged: the terminal resends it later.
        if (!this.admitFrame(t.payload.length + 3)) return;
        this.port.write(ACK_BYTE);
        this.receiveText(t.payload.toString('utf8'));
        return;
      case 'fault': {
        if (!this.admitFrame(t.fault.bytes)) return;
        // A damaged frame is NAKed so the sender resends now rather than after its timeout; noise
        // between frames has no sender to answer.
        if (!('garbage' in t.fault)) this.port.write(NAK_BYTE);
        const what = Object.keys(t.fault)[0];
        this.emit('invalid', { detail: `framing: ${what} (${t.fault.bytes} bytes)`, framing: t.fault });
        return;
      }
    }
  }

  protected override onDown(reason: LinkDown): void {
    const err = new LinkError(`serial link is down: ${reason.detail}`, {
      linkDown: true,
      ...(reason.noAck ? { noAck: true as const } : {}),
    });
    const pending = this.inFlight ? [this.inFlight, ...this.queue] : [...this.queue];
    this.inFlight = undefined;
    this.queue.length = 0;
    for (const out of pending) {
      this.clock.clearTimeout(out.timer);
      out.reject(err);
    }
  }

  protected pauseReading(ms: number): void {
    this.port.pause();
    this.resumeAfter(ms, () => this.port.resume());
  }

  protected closeTransport(): Promise<void> {
    this.port.off('data', this.onData);
    this.port.off('close', this.onClose);
    return new Promise((resolve) => {
      if (this.port.close && this.port.isOpen !== false) this.port.close(() => resolve());
      else {
        this.port.destroy();
        resolve();
      }
    });
  }
}

export function serverLinkFromPort(port: PortStream, opts: SerialTimingOptions = {}): ServerLink {
  return new SerialLink(port, { ...opts, parse: parseTerminalMessage });
}

export function terminalLinkFromPort(port: PortStream, opts: SerialTimingOptions = {}): TerminalSideLink {
  return new SerialLink(port, { ...opts, parse: parseServerMessage });
}
