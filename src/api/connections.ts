import type * as httpTypes from 'node:http';
import type * as httpsTypes from 'node:https';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type { Config } from '../config.js';
import { ERRORS } from '../errors.js';
import { errorBody, type MalformedLog } from './http-errors.js';

// Required, not imported: an ES `import` of node:http builds the module's ES facade, which reads every
// export, among them the lazy `WebSocket`/`MessageEvent`/`CloseEvent` that load node's own bundled
// undici (~750 KB of source): ~13 MiB of idle RSS for classes posd never uses (decision 0105).
const require = createRequire(import.meta.url);
const http = require('node:http') as typeof httpTypes;
const https = require('node:https') as typeof httpsTypes;

type HttpLimits = Pick<
  Config['http'],
  'headers_timeout_ms' | 'request_timeout_ms' | 'keep_alive_timeout_ms' | 'max_connections' | 'max_connections_per_address'
>;

/**
 * Which connections may open (issue 17, hole 5). Over the per-address cap, or over the global cap,
 * a connection is refused; from three quarters of the global cap on, only the box's own network
 * (its LAN tills, loopback) is admitted, so a flood from elsewhere leaves room for the counter.
 */
export class ConnectionGate {
  private readonly perAddress = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly limits: Pick<HttpLimits, 'max_connections' | 'max_connections_per_address'>,
    private readonly ownNetwork: (ip: string | undefined) => boolean,
  ) {}

  /** Counts the connection in and answers true, or answers false and counts nothing. */
  admit(address: string | undefined): boolean {
    const key = address ?? '';
    const mine = this.perAddress.get(key) ?? 0;
    if (mine >= this.limits.max_connections_per_address || this.total >= this.limits.max_connections) return false;
    const reserve = Math.floor(this.limits.max_connections / 4);
    if (this.total >= this.limits.max_connections - reserve && !this.ownNetwork(address)) return false;
    this.perAddress.set(key, mine + 1);
    this.total++;
    return true;
  }

  release(address: string | undefined): void {
    const key = address ?? '';
    const mine = (this.perAddress.get(key) ?? 1) - 1;
    if (mine <= 0) this.perAddress.delete(key);
    else this.perAddress.set(key, mine);
    this.total--;
  }

  get open(): number {
    return this.total;
  }
}

/**
 * The HTTP server posd listens with (fastify's `serverFactory`): Node's own deadlines, which fastify
 * leaves at minutes, set from `http.*`, checked often enough to matter; a connection over a cap gets
 * a 503 in the error body and is closed.
 * - headers: the request line and headers must arrive within `headers_timeout_ms`;
 * - request: the whole request, body included, within `request_timeout_ms` (a body trickled a byte
 *   every few seconds is cut off, answered or not: an early 401 does not keep it open);
 * - idle: a keep-alive connection with no request for `keep_alive_timeout_ms` is closed.
 * A request whose answer takes long (a sync long-poll) is not cut: its request has arrived.
 */
export function createGuardedServer(
  limits: HttpLimits,
  gate: ConnectionGate,
  malformed: MalformedLog,
  handler: httpTypes.RequestListener,
  tls?: { cert: string; key: string },
): httpTypes.Server {
  const deadline = Math.min(limits.headers_timeout_ms, limits.request_timeout_ms);
  const options = {
    headersTimeout: limits.headers_timeout_ms,
    requestTimeout: limits.request_timeout_ms,
    keepAliveTimeout: limits.keep_alive_timeout_ms,
    // Node looks for expired requests this often (30 s by default, longer than the deadlines).
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(deadline / 4))),
  };
  // HEAD is answered by the GET route, as fastify's HEAD twins did (createHttpApp turns them off:
  // registering a second route per GET was ~a third of a start's routing work, issue 16). Node has
  // already marked the response bodiless for a HEAD request, so the GET's headers, Content-Length
  // included, go out without its body.
  const listener: httpTypes.RequestListener = (req, res) => {
    if (req.method === 'HEAD') req.method = 'GET';
    handler(req, res);
  };
  // Under TLS the same deadlines hold (https.Server is an http.Server over TLS sockets); a renewed
  // certificate reaches it through setSecureContext (src/system/tls/server-tls.ts).
  const server: httpTypes.Server = tls
    ? (https.createServer({ ...options, cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' }, listener) as unknown as httpTypes.Server)
    : http.createServer(options, listener);
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (!gate.admit(address)) {
      malformed.note('too_many_connections', {});
      // Before the handshake there is no channel a TLS client could read a 503 on: the socket is cut.
      if (tls) {
        socket.destroy();
        return;
      }
      const body = JSON.stringify(errorBody('too_many_connections'));
      const { status } = ERRORS.too_many_connections;
      socket.end(
        `HTTP/1.1 ${status} Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${body}`,
      );
      socket.destroySoon();
      return;
    }
    socket.once('close', () => gate.release(address));
  });
  return server;
}
