import net from 'node:net';

export interface ProxyMode {
  /** false: every connection is refused at once (the link is down). */
  up: boolean;
  /** Chance that a response is cut after its first bytes (the request arrived; its answer is lost). */
  cutResponse: number;
  /** Delay added to every chunk, both ways. */
  delayMs: number;
}

/**
 * A TCP proxy that misbehaves on purpose: drops connections, cuts responses mid-way, delays
 * traffic, and cuts every open connection on demand. The target may move (a restarted central
 * listens on a new port).
 */
export class ChaosProxy {
  mode: ProxyMode = { up: true, cutResponse: 0, delayMs: 0 };
  cuts = 0;
  connections = 0;
  responses = 0;
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
    client.on('data', (chunk) => later(() => upstream.write(chunk)));
    upstream.on('data', (chunk) => {
      this.responses++;
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
