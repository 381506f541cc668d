import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, type ErrorBody } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';

/**
 * The error answers of HTTP itself (issue 17, hole 8): what Node's parser, fastify's router and
 * its content-type parsers refuse before any route runs. Each is the spec's error body with a
 * catalogue code; none echoes the request back (a path, a header) beyond a bounded prefix, and
 * none carries fastify's own `FST_ERR_*` codes or its `{error, statusCode}` shape.
 */
export function errorBody(code: keyof typeof ERRORS, extra: Partial<ErrorBody> = {}): ErrorBody {
  return { message: ERRORS[code].message, code, ...extra };
}

/** The longest part of a path an error message repeats: enough to see which call it was. */
const ECHOED_PATH = 100;

export function echoPath(url: string): string {
  const path = url.split('?')[0];
  return path.length > ECHOED_PATH ? `${path.slice(0, ECHOED_PATH)}…` : path;
}

/** The codes of a malformed (or excess) request: the client's fault, logged without a stack and throttled. */
const MALFORMED = new Set<string>([
  'invalid_json',
  'validation_error',
  'unknown_parameter',
  'bad_request',
  'request_timeout',
  'uri_too_long',
  'headers_too_large',
  'payload_too_large',
  'too_many_connections',
]);

/**
 * A malformed request is worth one line (a till sending broken bodies is something a manager should
 * see), but a client must not be able to fill the journal: at most one line per kind per minute,
 * with how many of that kind went unlogged since the last one, and never a stack (issue 17, hole 6).
 */
export class MalformedLog {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly log: Logger,
    private readonly clock: Clock,
    private readonly intervalMs = 60_000,
  ) {}

  /** Whether `code` is a malformed-request kind (and so was noted here). */
  note(code: string, where: { method?: string; route?: string }): boolean {
    if (!MALFORMED.has(code)) return false;
    const now = this.clock.now();
    const entry = this.last.get(code);
    if (entry && now - entry.at < this.intervalMs) {
      entry.suppressed++;
      return true;
    }
    const suppressed = entry?.suppressed ?? 0;
    this.last.set(code, { at: now, suppressed: 0 });
    this.log.warn({ code, ...where, suppressed }, 'malformed request refused (at most one line per kind a minute)');
    return true;
  }
}

/**
 * Node's `clientError`: the parser refused the request (or its header/body deadline passed) and
 * no request object exists. Written straight to the socket, then the connection is closed: after a
 * parse error nothing more on it can be trusted.
 */
export function clientErrorHandler(malformed: MalformedLog): (err: NodeJS.ErrnoException, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const code: keyof typeof ERRORS =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : err.code === 'HPE_HEADER_OVERFLOW' ? 'headers_too_large' : 'bad_request';
    malformed.note(code, {});
    const { status } = ERRORS[code];
    const body = JSON.stringify(errorBody(code));
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${status} ${reason(status)}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroySoon();
  };
}

function reason(status: number): string {
  return { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[status] ?? 'Error';
}

/** fastify's router errors (`frameworkErrors`): a segment that is not percent-encoding, or too long. */
export function frameworkErrors(err: Error & { code?: string }, _req: FastifyRequest, reply: FastifyReply): void {
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    reply.code(414).send(errorBody('uri_too_long'));
    return;
  }
  reply.code(400).send(errorBody('bad_request', { message: 'The path is not valid percent-encoding.' }));
}

/**
 * Which methods each route pattern takes, to tell a 405 (the path is an endpoint, not for that
 * method) from a 404. Filled from `onRoute`; a 404 is rare enough for a linear scan.
 */
export class MethodIndex {
  // Each route's pattern is compiled by the first 404 or 405 that looks, not at registration (issue 16).
  private readonly routes: Array<{ url: string; pattern?: RegExp; methods: Set<string> }> = [];
  private readonly byUrl = new Map<string, Set<string>>();

  add(url: string, method: string | string[]): void {
    let methods = this.byUrl.get(url);
    if (!methods) {
      methods = new Set();
      this.byUrl.set(url, methods);
      this.routes.push({ url, methods });
    }
    for (const m of Array.isArray(method) ? method : [method]) {
      const name = m.toUpperCase();
      methods.add(name);
      // HEAD is served by every GET route (createGuardedServer), without a route of its own.
      if (name === 'GET') methods.add('HEAD');
    }
  }

  /** The methods some route takes on this concrete path (empty: no route has this path). */
  allowed(url: string): string[] {
    const path = url.split('?')[0].replace(/(.)\/$/, '$1');
    const out = new Set<string>();
    for (const r of this.routes) if ((r.pattern ??= routePattern(r.url)).test(path)) for (const m of r.methods) out.add(m);
    return [...out].sort();
  }
}

function routePattern(url: string): RegExp {
  const source = url
    .replace(/(.)\/$/, '$1')
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}
