import net from 'node:net';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Issue 17, hole 5: every connection has a header, a body and an idle deadline, and a per-address
// and a global cap keep the box answering. Deadlines are Node's own timers (not posd's clock), so
// the test sets them small and measures real time against a bound far below the trickle's length.

interface Conn {
  socket: net.Socket;
  data(): string;
  closed: Promise<number>;
}

async function connect(url: string, localAddress?: string): Promise<Conn> {
  const { hostname, port } = new URL(url);
  const socket = net.connect({ host: hostname, port: Number(port), localAddress });
  let data = '';
  socket.on('data', (d) => (data += d));
  socket.on('error', () => {});
  const started = Date.now();
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - started)));
  await once(socket, 'connect');
  return { socket, data: () => data, closed };
}

const within = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: still open after ${ms} ms`)), ms))]);

describe('connection deadlines', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      config: { http: { port: 0, host: '127.0.0.1', headers_timeout_ms: 400, request_timeout_ms: 800, keep_alive_timeout_ms: 400 } },
    });
  });
  afterAll(() => s.stop());

  it('headers that never finish are cut off with a 408 in the error body', async () => {
    const c = await connect(s.url);
    c.socket.write('GET /api/terminals HTTP/1.1\r\nHost: x\r\n');
    await within(c.closed, 4000, 'half-sent headers');
    expect(c.data()).toMatch(/^HTTP\/1\.1 408/);
    expect(c.data()).toContain('"code":"request_timeout"');
  });

  it('a body trickled a byte at a time is cut off, even to /login and after a 401', async () => {
    for (const head of [
      `POST /api/cash_sales HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`,
      `POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n`,
    ]) {
      const c = await connect(s.url);
      c.socket.write(head);
      // A byte every 150 ms would take 150 s to finish; the request deadline is 800 ms.
      const drip = setInterval(() => c.socket.writable && c.socket.write('a'), 150);
      try {
        const elapsed = await within(c.closed, 5000, head.split('\r\n')[0]);
        expect(elapsed).toBeLessThan(5000);
      } finally {
        clearInterval(drip);
      }
    }
  });

  it('a connection that sends nothing is closed', async () => {
    const c = await connect(s.url);
    await within(c.closed, 4000, 'silent connection');
  });

  it('an idle keep-alive connection is closed after its answer', async () => {
    const c = await connect(s.url);
    c.socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    await within(c.closed, 4000, 'idle keep-alive');
    expect(c.data()).toMatch(/^HTTP\/1\.1 200/);
  });

  it('a request that arrived in time is answered normally', async () => {
    const r = await s.api('POST', '/cash_sales', { body: { amount_in_cents: 100 } });
    expect(r.status).toBeLessThan(500);
  });
});

describe('connection caps', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ config: { http: { port: 0, host: '127.0.0.1', max_connections: 8, max_connections_per_address: 3 } } });
  });
  afterAll(() => s.stop());

  const refused = async (c: Conn) => {
    await within(c.closed, 4000, 'refused connection');
    expect(c.data()).toMatch(/^HTTP\/1\.1 503/);
    expect(c.data()).toContain('"code":"too_many_connections"');
  };

  it('refuses a connection over the per-address cap, and admits again once one closes', async () => {
    const held = [await connect(s.url), await connect(s.url), await connect(s.url)];
    await refused(await connect(s.url));
    // Another address is not held back by this one.
    const other = await connect(s.url, '127.0.0.2');
    other.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await within(other.closed, 4000, 'other address');
    expect(other.data()).toMatch(/^HTTP\/1\.1 200/);

    held[0].socket.destroy();
    await held[0].closed;
    const again = await connect(s.url);
    again.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await within(again.closed, 4000, 'admitted again');
    expect(again.data()).toMatch(/^HTTP\/1\.1 200/);
    for (const c of held) c.socket.destroy();
    await Promise.all(held.map((c) => c.closed));
  });

  it('refuses a connection over the global cap', async () => {
    const held: Conn[] = [];
    for (const address of ['127.0.0.3', '127.0.0.3', '127.0.0.3', '127.0.0.4', '127.0.0.4', '127.0.0.4', '127.0.0.5', '127.0.0.5']) {
      held.push(await connect(s.url, address));
    }
    // Eight open, none refused: a ninth, from an address with none open, is over the global cap.
    await refused(await connect(s.url, '127.0.0.6'));
    expect(held.every((c) => c.data() === '' && !c.socket.destroyed)).toBe(true);
    for (const c of held) c.socket.destroy();
    await Promise.all(held.map((c) => c.closed));
  });
});
