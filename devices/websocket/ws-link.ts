/**
 * A TerminalLink over one `ws` WebSocket. posd's HTTP server accepts the upgrade on
 * /terminals/link and passes the socket to `serverLinkFromWebSocket`; the simulator uses
 * `connectWebSocketLink`. One JSON message per text frame; pings are protocol messages (not
 * WebSocket control frames) so both transports share one keepalive rule.
 */
import WebSocket from 'ws';
import { BaseLink, LINK_CLOSE_FLOOD, LinkError, type FrameBudget, type LinkOptions, type ServerLink, type TerminalSideLink } from '../link.js';
import { MAX_MESSAGE_BYTES, parseServerMessage, parseTerminalMessage } from '../protocol/parse.js';
import type { Clock } from '../clock.js';

export class WebSocketLink<In extends { type: string }, Out extends { type: string }> extends BaseLink<In, Out> {
  readonly transport = 'websocket' as const;

  constructor(
    private readonly ws: WebSocket,
    opts: LinkOptions<In>,
  ) {
    super(opts);
    ws.on('message', (data, isBinary) => {
      const size = Array.isArray(data) ? data.reduce((n, d) => n + d.length, 0) : (data as Buffer | ArrayBuffer).byteLength;
      // Counted before anything else is done with it: a frame over the budget costs no decoding.
      if (!this.admitFrame(size)) return;
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      if (buf.length > MAX_MESSAGE_BYTES) {
        this.emit('invalid', { reason: 'oversized', detail: `${buf.length} bytes over ${MAX_MESSAGE_BYTES}` });
        return;
      }
      // Binary frames are accepted if they hold UTF-8 JSON; some terminal stacks only send binary.
      void isBinary;
      this.receiveText(buf.toString('utf8'));
    });
    ws.on('close', (code, reason) => this.goDown({ disconnected: true, detail: `socket closed (${code}${reason.length ? ` ${reason}` : ''})` }));
    // 'close' always follows 'error' in ws; the listener only keeps the error from being thrown.
    ws.on('error', () => {});
    if (ws.readyState === WebSocket.OPEN) this.startKeepalive();
    else ws.once('open', () => this.startKeepalive());
  }

  protected writeMessage(msg: Out): Promise<void> {
    return this.writeRaw(JSON.stringify(msg));
  }

  writeRaw(data: Buffer | string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.ws.readyState !== WebSocket.OPEN) {
        reject(new LinkError('socket is not open', { linkDown: true }));
        return;
      }
      this.ws.send(data, { binary: false }, (err) => (err ? reject(new LinkError(`write failed: ${err.message}`, { linkDown: true })) : resolve()));
    });
  }

  protected pauseReading(ms: number): void {
    this.ws.pause();
    this.resumeAfter(ms, () => this.ws.resume());
  }

  protected closeTransport(code = 1000): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close(code, code === LINK_CLOSE_FLOOD ? 'frame budget exceeded' : 'closed');
      // A peer that never completes the closing handshake must not hold the link open.
      const t = this.clock.setTimeout(() => this.ws.terminate(), 2_000);
      this.ws.once('close', () => this.clock.clearTimeout(t));
    });
  }
}

export interface WebSocketLinkOptions {
  clock?: Clock;
  budget?: FrameBudget;
  pingIntervalMs?: number;
  maxMissedPings?: number;
}

/** Wraps a socket accepted by posd's HTTP server. */
export function serverLinkFromWebSocket(ws: WebSocket, opts: WebSocketLinkOptions = {}): ServerLink {
  return new WebSocketLink(ws, { ...opts, parse: parseTerminalMessage });
}

/** Wraps a socket opened by a terminal. */
export function terminalLinkFromWebSocket(ws: WebSocket, opts: WebSocketLinkOptions = {}): TerminalSideLink {
  return new WebSocketLink(ws, { ...opts, parse: parseServerMessage });
}

export interface ConnectLinkOptions extends WebSocketLinkOptions {
  /** For `wss://`: the certificate authority to trust (posd's box CA, `posd tls ca --pem`), PEM. */
  ca?: string | Buffer;
}

/**
 * Opens a terminal-side link to `ws://host:port/terminals/link` (or `wss://` with `ca`); rejects
 * with `{disconnected}` flags. A certificate the CA did not sign is such a rejection too.
 */
export function connectWebSocketLink(url: string, opts: ConnectLinkOptions = {}): Promise<TerminalSideLink> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { maxPayload: MAX_MESSAGE_BYTES * 2, ...(opts.ca ? { ca: opts.ca } : {}) });
    const onError = (err: Error) => reject(Object.assign(err, { disconnected: true as const }));
    ws.once('error', onError);
    ws.once('open', () => {
      ws.off('error', onError);
      resolve(terminalLinkFromWebSocket(ws, opts));
    });
  });
}
