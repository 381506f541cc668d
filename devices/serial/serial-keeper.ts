/**
 * Keeps a serial port open for as long as it is wanted: opens it, hands out one link per opening,
 * and after the link goes down (port unplugged, closed, or a frame never acknowledged) closes and
 * reopens it with bounded exponential back-off. posd runs one per configured terminal port.
 */
import { EventEmitter } from 'node:events';
import { realClock, type Clock, type TimerHandle } from '../clock.js';
import type { TerminalLink } from '../link.js';
import { openSerialPort, type PortOpener } from './port-opener.js';
import { serverLinkFromPort, terminalLinkFromPort, type PortStream, type SerialTimingOptions } from './serial-link.js';
import type { ServerMessage, TerminalMessage } from '../protocol/messages.js';

export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
}

export interface SerialKeeperOptions extends SerialTimingOptions {
  path: string;
  baudRate?: number;
  open?: PortOpener;
  backoff?: BackoffOptions;
}

export type SerialKeeperEvents<L> = {
  /** A fresh link on a freshly opened port. */
  link: [L];
  /** An open attempt failed; another follows after `retryInMs`. */
  openFailed: [{ error: Error; retryInMs: number }];
};

type AnyLink = TerminalLink<{ type: string }, { type: string }>;

export class SerialKeeper<L extends AnyLink> extends EventEmitter<SerialKeeperEvents<L>> {
  private readonly clock: Clock;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private delayMs: number;
  private timer: TimerHandle | undefined;
  private stopped = true;
  private currentLink: L | undefined;

  constructor(
    private readonly opts: SerialKeeperOptions,
    private readonly makeLink: (port: PortStream, opts: SerialTimingOptions) => L,
  ) {
    super();
    this.clock = opts.clock ?? realClock();
    this.initialMs = opts.backoff?.initialMs ?? 500;
    this.maxMs = opts.backoff?.maxMs ?? 30_000;
    this.delayMs = this.initialMs;
  }

  get link(): L | undefined {
    return this.currentLink;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.attempt();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    const link = this.currentLink;
    this.currentLink = undefined;
    if (link) await link.close('keeper stopped');
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    const open = this.opts.open ?? openSerialPort;
    let port: PortStream;
    try {
      port = await open({ path: this.opts.path, baudRate: this.opts.baudRate });
    } catch (error) {
      const retryInMs = this.nextDelay();
      this.emit('openFailed', { error: error as Error, retryInMs });
      this.schedule(retryInMs);
      return;
    }
    if (this.stopped) {
      port.close?.();
      return;
    }
    const link = this.makeLink(port, this.opts);
    this.currentLink = link;
    link.once('down', () => {
      if (this.currentLink === link) this.currentLink = undefined;
      // Only a link that carried a valid message proves the far end was there; a port that opens
      // and dies at once keeps backing off.
      if (link.messagesReceived > 0) this.delayMs = this.initialMs;
      void link.close().finally(() => this.schedule(this.nextDelay()));
    });
    this.emit('link', link);
  }

  private nextDelay(): number {
    const d = this.delayMs;
    this.delayMs = Math.min(this.maxMs, this.delayMs * 2);
    return d;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => void this.attempt(), ms);
  }
}

/** posd's side: opens the configured terminal port, one ServerLink per opening. */
export function keepServerSerialLink(opts: SerialKeeperOptions) {
  return new SerialKeeper(opts, serverLinkFromPort);
}

/** A terminal's side (the simulator). */
export function keepTerminalSerialLink(opts: SerialKeeperOptions) {
  return new SerialKeeper(opts, terminalLinkFromPort);
}

export type ServerSerialKeeper = SerialKeeper<TerminalLink<TerminalMessage, ServerMessage>>;
