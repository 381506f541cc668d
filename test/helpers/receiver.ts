import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** The answer's body ('ok' when not given). */
  body?: string;
  /** Real milliseconds before answering (a slow receiver). */
  delayMs?: number;
  /** Hold the answer until the test calls `release()` (a receiver that answers when told). */
  hold?: boolean;
}

/**
 * A real webhook receiver on 127.0.0.1, port 0. `replies` scripts the answers in order (the last
 * one repeats); every request is kept with its raw body, and `waitFor(n)` resolves once n arrived.
 */
export class Receiver {
  readonly received: Received[] = [];
  /** Requests being answered now, and the most at once. */
  active = 0;
  maxActive = 0;
  private server: Server;
  private waiters: Array<{ n: number; resolve: () => void }> = [];
  /** Answers held back (`hold`), oldest first. */
  private readonly held: Array<(status?: number) => void> = [];
  replies: Reply[];

  constructor(replies: Reply[] = [{ status: 200 }]) {
    this.replies = replies;
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        const reply = this.replies[Math.min(this.received.length - 1, this.replies.length - 1)];
        this.maxActive = Math.max(this.maxActive, ++this.active);
        const answer = (status = reply.status) => {
          this.active--;
          res.writeHead(status, reply.headers ?? {});
          res.end(reply.body ?? 'ok');
        };
        if (reply.hold) this.held.push(answer);
        else if (reply.delayMs) setTimeout(answer, reply.delayMs);
        else answer();
        this.waiters = this.waiters.filter((w) => {
          if (this.received.length >= w.n) w.resolve();
          return this.received.length < w.n;
        });
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  waitFor(n: number): Promise<void> {
    if (this.received.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  /** Requests whose answer is held now. */
  get holding(): number {
    return this.held.length;
  }

  /** Answers the oldest held request, with `status` or its scripted one. */
  release(status?: number): void {
    const answer = this.held.shift();
    if (!answer) throw new Error('no held request to release');
    answer(status);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
