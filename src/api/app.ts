import { readinessOf } from './readiness.js';
import sjson from 'secure-json-parse';
import Fastify, { LogController, type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import { writeOrigin } from '../db/database.js';
import { isDiskFull } from '../db/disk-full.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { ApiError, ERRORS, type ErrorBody } from '../errors.js';
import { MalformedLog, MethodIndex, clientErrorHandler, echoPath, errorBody, frameworkErrors } from './http-errors.js';
import { accountsOf, hashKey } from '../accounts/service.js';
import { Authenticator } from './auth.js';
import { IdempotencyStore, registerIdempotency } from './idempotency.js';
import { RollingLimiter, WindowLimiter } from './rate-limit.js';
import { createValidatorCompiler, fieldErrors, unknownFields } from './validation.js';
import { lazySerializerFactory } from './lazy-serializer.js';
import { lazyRequestLogger } from './request-logger.js';
import { lazyOpenApi } from './openapi.js';
import { writeRoutesInPipeline, holdUntilCommitted, holdUntilLogged } from './write-pipeline.js';
import { normaliseBody, noteWrapper } from './body-forms.js';
import type { ApiApp, PosdModule } from './module.js';
import type { Logger } from '../logger.js';
import { registerHttpMetrics } from '../system/metrics.js';
import { OwnNetwork } from '../system/own-network.js';
import { ConnectionGate, createGuardedServer } from './connections.js';

const JSON_SUFFIX = /^(\/api\/[^?]*?)\.json(?=\?|$)/;
const USERS_PATH = /^\/api\/users(\.json|\.xml)?(\/|\?|$)/;

/** Deeper than any body posd takes; deeper nesting would only exhaust the validator's stack. */
const MAX_JSON_DEPTH = 64;

/** Whether the JSON text nests arrays and objects deeper than `max` (a linear scan, before parsing). */
function nestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

function headerValue(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The catalogue code for a client fault that reached the error handler with only a status. */
const CLIENT_FAULTS: Record<number, keyof typeof ERRORS> = {
  400: 'bad_request',
  404: 'route_not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'invalid_json',
  431: 'headers_too_large',
};

/** Maps anything thrown to the spec's error body; nothing escapes as a bare 500 page. */
function sendError(err: FastifyError | ApiError | Error, req: FastifyRequest, reply: FastifyReply, malformed: MalformedLog, dataDir: string): FastifyReply {
  const answer = isDiskFull(err)
    ? {
        status: ERRORS.disk_full.status,
        body: errorBody('disk_full', {
          message: `The disk holding posd's data (${dataDir}) is full: nothing was written. Reads go on; writes resume by themselves once space is freed.`,
        }),
        headers: {},
      }
    : errorAnswer(err);
  // A full disk is logged once when it starts and once when it ends (the daemon watches it), not per refused request.
  if (answer.status >= 500 && answer.body.code !== 'disk_full') req.log.error({ err }, 'request failed');
  else malformed.note(answer.body.code ?? '', { method: req.method, route: req.routeOptions.url });
  for (const [k, v] of Object.entries(answer.headers)) reply.header(k, v);
  return reply.code(answer.status).send(answer.body);
}

function errorAnswer(err: FastifyError | ApiError | Error): { status: number; body: ErrorBody; headers: Record<string, string> } {
  const answer = (code: keyof typeof ERRORS, extra: Partial<ErrorBody> = {}) => ({ status: ERRORS[code].status, body: errorBody(code, extra), headers: {} });
  if (err instanceof ApiError) return { status: err.status, body: err.body(), headers: err.headers };
  const fe = err as FastifyError & { validationContext?: string };
  if (fe.validation) {
    // An unknown field is named on its own: the caller sent something posd would otherwise ignore.
    const unknown = fe.validationContext === 'body' || fe.validationContext === 'querystring' ? unknownFields(fe.validation as never) : [];
    if (unknown.length > 0) {
      return answer('unknown_parameter', {
        message: `Unknown parameter: ${unknown.join(', ')}`,
        errors: Object.fromEntries(unknown.map((f) => [f, [f === '(more)' ? 'more unknown parameters are not listed' : 'is not a known parameter']])),
      });
    }
    return answer('validation_error', { errors: fieldErrors(fe.validation as never, fe.validationContext) });
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return answer('payload_too_large');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return answer('invalid_json');
  }
  if (err instanceof SyntaxError) return answer('invalid_json');
  const status = fe.statusCode ?? 500;
  // Any other client fault keeps a catalogue code for its status; fastify's own code stays inside.
  if (status >= 400 && status < 500) return answer(CLIENT_FAULTS[status] ?? 'validation_error');
  return answer('internal_error');
}

/** What the HTTP layer itself needs of a process: a daemon's context, or a central-front's (src/front.ts). */
export type HttpBase = Pick<AppContext, 'config' | 'log' | 'clock' | 'shutdown'>;

/**
 * Closes the HTTP server: requests in flight get `graceMs` to finish, then their connections are
 * cut. False (and logged) when the close failed. The daemon's and a central-front's stop share it.
 */
export async function closeHttpApp(app: ApiApp, graceMs: number, log: Pick<Logger, 'error'>): Promise<boolean> {
  const server = app.server;
  const grace = setTimeout(() => server.closeAllConnections(), graceMs);
  try {
    await app.close();
    return true;
  } catch (err) {
    log.error({ err }, 'closing the HTTP server failed');
    return false;
  } finally {
    clearTimeout(grace);
  }
}

/**
 * A process's `stop`: `halt` run once however often it is called (SIGTERM twice, a test's stop
 * after a signal's), between the log lines an operator reads. The daemon's and a central-front's.
 */
export function stopOnce(log: Pick<Logger, 'info'>, halt: () => Promise<boolean>): () => Promise<boolean> {
  let stopping: Promise<boolean> | undefined;
  return () =>
    (stopping ??= (async () => {
      log.info('posd stopping');
      const clean = await halt();
      log.info(clean ? 'posd stopped' : 'posd stopped with errors');
      return clean;
    })());
}

/**
 * The HTTP plumbing every posd process answers with, before any route: the guarded server, the
 * validator and the one error body, JSON bodies, 404/405, the blocking rules, closing connections
 * while stopping, and the request metrics. `notFound` answers a path no route takes (default: 404
 * `route_not_found`); a central-front names what it does not serve.
 */
export function createHttpApp(
  base: HttpBase,
  opts: { notFound?: (req: FastifyRequest) => ApiError | undefined; tls?: { cert: string; key: string } } = {},
): ApiApp {
  const { config } = base;
  const malformed = new MalformedLog(base.log, base.clock);
  const ownNetwork = new OwnNetwork(base.clock, config.http.own_networks);
  const gate = new ConnectionGate(config.http, (ip) => ownNetwork.has(ip));
  const app = Fastify({
    loggerInstance: base.log,
    // Per-request lines would dominate the log of a busy till; errors are logged where they happen.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: config.http.body_limit_bytes,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true },
    // HEAD requests reach the GET routes instead (createGuardedServer).
    exposeHeadRoutes: false,
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory() as never } },
    // The hosted service answers every route with a `.json` suffix too (`/checkouts.json`,
    // `/users/us_1.json`), and its older clients call them so: one rewrite serves them all.
    rewriteUrl: (req) => (req.url ?? '/').replace(JSON_SUFFIX, '$1'),
    clientErrorHandler: clientErrorHandler(malformed),
    serverFactory: (handler) => createGuardedServer(config.http, gate, malformed, handler, opts.tls),
    frameworkErrors,
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as ApiApp;

  // Before any route, so every route (under /api and outside it) is counted.
  registerHttpMetrics(app as never, base);
  app.setValidatorCompiler(createValidatorCompiler());
  app.setErrorHandler((err, req, reply) => sendError(err as Error, req, reply, malformed, config.data_dir));
  const methods = new MethodIndex();
  app.addHook('onRoute', (route) => methods.add(route.url, route.method));
  app.setNotFoundHandler((req, reply) => {
    const allowed = methods.allowed(req.url);
    if (allowed.length > 0) {
      return reply
        .code(405)
        .header('allow', allowed.join(', '))
        .send(errorBody('method_not_allowed', { message: `${req.method} is not taken here; use ${allowed.join(', ')}.` }));
    }
    const elsewhere = opts.notFound?.(req);
    if (elsewhere) return reply.code(elsewhere.status).send(elsewhere.body());
    return reply.code(404).send(errorBody('route_not_found', { message: `No such endpoint: ${req.method} ${echoPath(req.url)}` }));
  });

  // Every body is read as JSON whatever its content type (curl -d sends form encoding by default);
  // an empty body is an empty object, so POSTs without parameters need no body at all.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, {});
    // Hostile shapes are the caller's fault (400), not ours (a stack overflow, a polluted prototype).
    if (nestsDeeper(text, MAX_JSON_DEPTH))
      return done(new ApiError('invalid_json', { message: `The body nests deeper than ${MAX_JSON_DEPTH} levels.` }), undefined);
    let parsed: unknown;
    try {
      parsed = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch {
      return done(new ApiError('invalid_json'), undefined);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return done(new ApiError('invalid_json'), undefined);
    done(null, parsed);
  });

  const blocked = new Set(config.blocking.ips);
  // Hooks on every request are written callback-style: an async hook costs a promise per request.
  app.addHook('onRequest', (req, reply, done) => {
    if (req.url === '/healthz' || req.url === '/readyz') return done();
    const key = headerValue(req, 'x-secret-key') ?? '';
    const agent = headerValue(req, 'user-agent') ?? '';
    if (
      blocked.has(req.ip) ||
      config.blocking.key_prefixes.some((p) => p && key.startsWith(p)) ||
      config.blocking.user_agents.some((u) => u && agent.includes(u))
    ) {
      reply.code(503).send(errorBody('blocked'));
      return;
    }
    done();
  });

  // Once TLS is on, browsers are told to come back only over it (the page's login, its cookies).
  const hsts = opts.tls && config.tls.hsts_max_age_seconds > 0 ? `max-age=${config.tls.hsts_max_age_seconds}` : undefined;
  // While stopping, answers close their connection so keep-alive clients do not hold the stop open.
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (hsts) reply.header('strict-transport-security', hsts);
    if (base.shutdown.aborted) reply.header('connection', 'close');
    done(null, payload);
  });

  return app;
}

/**
 * The HTTP application as a plugin tree that never listens (`server.ts` listens; tests build the
 * same app and call `listen({port: 0})`). No business rules here: authentication and account
 * context, limits, idempotency, the error body and OpenAPI, then each module's routes.
 */
export async function buildApp(ctx: AppContext, modules: readonly PosdModule[], opts: { tls?: { cert: string; key: string } } = {}): Promise<ApiApp> {
  const { config } = ctx;
  const app = createHttpApp(ctx, { tls: opts.tls });

  // @fastify/swagger is loaded by the first GET /openapi.json, not at start (src/api/openapi.ts).
  const openApiDocument = lazyOpenApi(app, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'posd commerce and payments API', version: '1.0.0' },
      servers: [{ url: '/api' }],
      components: { securitySchemes: { secretKey: { type: 'apiKey', in: 'header', name: 'X-SECRET-KEY' } } },
      security: [{ secretKey: [] }],
    },
  });

  const usersWindowMs = config.limits.users_window_seconds * 1000;
  const usersPerIp = new WindowLimiter(config.limits.users_per_ip_per_window, usersWindowMs, ctx.clock);
  const usersPerTestKey = new WindowLimiter(config.limits.users_per_test_key_per_window, usersWindowMs, ctx.clock);
  app.addHook('onRequest', (req, reply, done) => {
    // A chain's standby core answers no write (docs/central.md, "One log"): refused here, before a
    // route could reach out (a processor, a webhook URL) for a change it could never commit.
    if (req.method !== 'GET' && req.method !== 'HEAD' && req.url.startsWith('/api/')) {
      const r = readinessOf(ctx.db);
      if (!r.ready && r.refusal) {
        const err = r.refusal();
        reply.code(err.status).send(err.body());
        return;
      }
    }
    // The /users windows count every call, found or not, before any other work (spec section 8).
    if (USERS_PATH.test(req.url)) {
      const key = headerValue(req, 'x-secret-key') ?? '';
      const wait = usersPerIp.hit(req.ip) || (key.startsWith('sk_test_') ? usersPerTestKey.hit(hashKey(key)) : 0);
      if (wait) {
        reply.code(429).header('Retry-After', String(wait)).send(errorBody('rate_limited'));
        return;
      }
    }
    done();
  });

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const r = readinessOf(ctx.db);
    return reply.code(r.ready ? 200 : 503).send({ status: r.status });
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => openApiDocument());

  const accounts = accountsOf(ctx);
  const authenticator = new Authenticator(accounts);
  const idempotency = new IdempotencyStore(ctx.db, ctx.clock, ctx.bootId);
  const perKey = new RollingLimiter(config.limits.per_key_per_second, 1000, ctx.clock);

  const limited = (seconds: number) => new ApiError('rate_limited', { headers: { 'Retry-After': String(seconds) } });

  await app.register(
    async (api) => {
      api.decorateRequest('auth', null as never);
      // Wrapped or flat bodies and integer-valued strings, for every route of every module.
      api.addHook('onRoute', noteWrapper);
      api.addHook('onRequest', (req, _reply, done) => {
        try {
          const query = req.query as Record<string, unknown> | undefined;
          const alias = typeof query?.account_id === 'string' ? query.account_id : undefined;
          req.auth = authenticator.authenticate(headerValue(req, 'x-secret-key'), headerValue(req, 'x-account-id') ?? alias);
          const wait = perKey.hit(req.auth.keyId);
          if (wait) throw limited(wait);
          if (req.auth.kind === 'organization' && req.method !== 'GET' && req.method !== 'HEAD') {
            throw new ApiError('organization_key_unsupported');
          }
        } catch (err) {
          return done(err as Error);
        }
        done();
      });
      // `account_id` in a body is the older spelling of X-ACCOUNT-ID on endpoints that took it.
      api.addHook('preValidation', async (req) => {
        normaliseBody(req);
        const body = req.body as Record<string, unknown> | undefined;
        const alias = body && typeof body.account_id === 'string' ? body.account_id : undefined;
        // Taken here for every route; routes whose schema does not name it never see it.
        const declared = (req.routeOptions.schema?.body as { properties?: Record<string, unknown> } | undefined)?.properties;
        if (alias !== undefined && !(declared && 'account_id' in declared)) delete body!.account_id;
        if (alias && !headerValue(req, 'x-account-id') && alias !== req.auth.account?.id) {
          req.auth = authenticator.authenticate(headerValue(req, 'x-secret-key'), alias);
        }
      });
      // A write route's commits are audited against the one pipeline (commitAudit in db/database.ts).
      api.addHook('preValidation', (req, _reply, done) => {
        if (req.method === 'GET' || req.method === 'HEAD') return done();
        writeOrigin.run(`${req.method} ${req.routeOptions.url}`, done);
      });
      registerIdempotency(api, idempotency);
      // Every write route runs in the one commit pipeline and answers after its commit.
      api.addHook('onRoute', writeRoutesInPipeline(ctx.db));
      api.addHook('onSend', holdUntilCommitted);
      api.addHook('onSend', holdUntilLogged(ctx.db));
      for (const m of modules) if (m.api) await m.api(api, ctx);
    },
    { prefix: '/api' },
  );

  for (const m of modules) if (m.root) await m.root(app, ctx);
  return app;
}
