import net from 'node:net';

export interface ProxyMode {
  /** false: every connection is refused at once (the link is down). */
  up: boolean;
  /** Chance that a response is cut after its first bytes (the request arrived; its answer is lost). */
  cutResponse: number;
  /** Delay added to every chunk, both ways. */
  delayMs: number;
}

/** A response the proxy watched go by (or cut): its request line, status line and body as far as it went. */
export interface SeenResponse {
  request: string;
  status: number;
  body: string;
  cut: boolean;
}

/** What one connection is in the middle of, for the request-aware modes (see `watch`, `cutNextResponse`). */
interface Exchange {
  request: string;
  head: Buffer;
  headEnd: number;
  length: number;
  cut?: { bodyBytes: number; done: (r: SeenResponse) => void };
  watched: boolean;
}

const REQUEST_LINE = /^(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (\S+) HTTP\/1\.1\r\n/;

/**
 * A TCP proxy that misbehaves on purpose: drops connections, cuts responses mid-way, delays
 * traffic, and cuts every open connection on demand. The target may move (a restarted central
 * listens on a new port).
 *
 * It also reads enough HTTP to cut one chosen response deterministically (`cutNextResponse`) and to
 * keep the responses to chosen requests (`watch`). That relies on one request in flight per
 * connection (undici's default, pipelining 1): a chunk from the client that starts with a request
 * line starts the next exchange, and the next bytes from the server are its response.
 */
export class ChaosProxy {
  mode: ProxyMode = { up: true, cutResponse: 0, delayMs: 0 };
  cuts = 0;
  connections = 0;
  responses = 0;
  /** Responses to the requests named by `watch` (e.g. `POST /sync/push`), whole or cut, in order. */
  readonly seen: SeenResponse[] = [];
  private watching: string[] = [];
  private armed: Array<{ request: string; bodyBytes: number; done: (r: SeenResponse) => void }> = [];
  private server = net.createServer((c) => this.handle(c));
  private open = new Set<net.Socket>();

  constructor(
    public target: { host: string; port: number },
    private readonly random: () => number = Math.random,
  ) {}

  async listen(): Promise<number> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Keeps the responses to requests whose line starts with `request` (`'POST /sync/push'`) in `seen`. */
  watch(request: string): void {
    this.watching.push(request);
  }

  /**
   * Cuts the response to the next request whose line starts with `request`: the server's status
   * line and headers go through, then `bodyBytes` bytes of its body, then both sockets close. The
   * server handled the request in full; the client never gets its answer. Resolves with what the
   * server had answered (its status, and the body as far as it was let through).
   */
  cutNextResponse(request: string, bodyBytes: number): Promise<SeenResponse> {
    return new Promise((done) => this.armed.push({ request, bodyBytes, done }));
  }

  /** Cuts every connection now (the cable is pulled mid-request). */
  cutAll(): void {
    for (const s of this.open) s.destroy();
    this.open.clear();
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private track(s: net.Socket): void {
    this.open.add(s);
    s.on('close', () => this.open.delete(s));
    s.on('error', () => s.destroy());
  }

  private handle(client: net.Socket): void {
    this.track(client);
    this.connections++;
    if (!this.mode.up) return void client.destroy();
    const upstream = net.connect(this.target.port, this.target.host);
    this.track(upstream);
    const later = (fn: () => void) => (this.mode.delayMs ? setTimeout(fn, this.mode.delayMs) : fn());
    let exchange: Exchange | undefined;
    let cutting = false;
    client.on('data', (chunk) => {
      const line = REQUEST_LINE.exec(chunk.subarray(0, 2048).toString('latin1'));
      if (line) exchange = this.startExchange(`${line[1]} ${line[2]}`);
      later(() => upstream.write(chunk));
    });
    upstream.on('data', (chunk) => {
      if (cutting) return;
      this.responses++;
      if (exchange) {
        const ex = exchange;
        const finished = this.followResponse(ex, chunk);
        if (ex.cut) {
          if (ex.headEnd < 0) return; // the headers are not whole yet: hold the bytes back
          // Headers, then `bodyBytes` of the body, then nothing: the answer is lost on its way back.
          // Nothing of this response went through yet, so what is let through is taken from the start.
          const keep = Math.min(ex.head.length, ex.headEnd + ex.cut.bodyBytes);
          cutting = true;
          this.cuts++;
          const seen = { ...this.responseOf(ex), body: ex.head.subarray(ex.headEnd, keep).toString('utf8'), cut: true };
          if (ex.watched) this.seen.push(seen);
          ex.cut.done(seen);
          exchange = undefined;
          // Destroyed only once those bytes are flushed, so the client reliably gets exactly them.
          client.write(ex.head.subarray(0, keep), () => {
            client.destroy();
            upstream.destroy();
          });
          return;
        }
        if (finished) {
          this.seen.push({ ...this.responseOf(ex), cut: false });
          exchange = undefined;
        }
      }
      if (this.mode.cutResponse && this.random() < this.mode.cutResponse) {
        this.cuts++;
        // Half a response, then nothing: the request was applied, its answer is lost.
        client.write(chunk.subarray(0, Math.floor(chunk.length / 2)));
        client.destroy();
        upstream.destroy();
        return;
      }
      later(() => client.write(chunk));
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  private startExchange(request: string): Exchange | undefined {
    const armed = this.armed.findIndex((a) => request.startsWith(a.request));
    const cut = armed >= 0 ? this.armed.splice(armed, 1)[0] : undefined;
    const watched = this.watching.some((w) => request.startsWith(w));
    if (!cut && !watched) return undefined;
    return { request, head: Buffer.alloc(0), headEnd: -1, length: -1, watched, cut: cut && { bodyBytes: cut.bodyBytes, done: cut.done } };
  }

  /** Accumulates a response; true once its body (by Content-Length) is complete. */
  private followResponse(ex: Exchange, chunk: Buffer): boolean {
    ex.head = Buffer.concat([ex.head, chunk]);
    if (ex.headEnd < 0) {
      const end = ex.head.indexOf('\r\n\r\n');
      if (end < 0) return false;
      ex.headEnd = end + 4;
      const length = /\r\ncontent-length: *(\d+)/i.exec(ex.head.subarray(0, end).toString('latin1'));
      ex.length = length ? Number(length[1]) : 0;
    }
    return ex.head.length - ex.headEnd >= ex.length;
  }

  private responseOf(ex: Exchange): SeenResponse {
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(ex.head.toString('latin1', 0, 16))?.[1] ?? 0);
    return { request: ex.request, status, body: ex.head.subarray(ex.headEnd, ex.headEnd + ex.length).toString('utf8'), cut: false };
  }
}

/** A small seeded generator (mulberry32), so a chaos schedule can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
