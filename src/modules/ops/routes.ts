import { heldPanel, heldRoutes } from './held-panel.js';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { cookie, parseCookies, parseForms, sameToken, seeOther, sendHtml } from '../../api/html.js';
import { OwnNetwork } from '../../system/own-network.js';
import { DEVICE_COOKIE, DEVICE_COOKIE_DAYS, FailureLimit, LoginBackoff, PasswordChecks, knownDevice, newDeviceToken } from './login-limit.js';
import { metrics } from '../../system/metrics.js';
import { hashPassword, needsRehash, verifyPassword } from './password.js';
import { adoptSinglePassword, listManagers, managerByName, managerCount, setManagerPasswordOf, type ManagerRow } from './managers.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { statusView } from './panels.js';
import { statusSources, type StoreState } from '../../system/status-sources.js';

const STORE_STATES: StoreState[] = ['silent', 'attention', 'new', 'ok'];
import { outageRoutes, outageSections } from './outage-routes.js';
import { accountFormatsPanel } from './formats-panel.js';
// The page's markup is loaded by the first page view, not at start.
const page = () => import('./page.js');
import { LOGIN_COOKIE, currentSession, endSession, newLoginToken, startSession } from './session.js';

const FormBody = Type.Object(
  {
    _csrf: Type.Optional(Type.String({ maxLength: 200 })),
    name: Type.Optional(Type.String({ maxLength: 64 })),
    password: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: true },
);
const Html = { 200: Type.String(), 303: Type.String(), 400: Type.String(), 401: Type.String(), 403: Type.String(), 429: Type.String() };

/**
 * The manager's status page (`/`), its login and logout, the resend and replay buttons and `/metrics`: outside
 * `/api`, in their own plugin scope so HTML forms (urlencoded bodies) are parsed here only.
 */
export async function opsRoutes(app: ApiApp, ctx: AppContext): Promise<void> {
  const failures = new FailureLimit(ctx.clock, ctx.config.ops.login_failures_per_address);
  const checks = new PasswordChecks(ctx.config.ops.login_concurrency, ctx.config.ops.login_queue);
  const everyone = new LoginBackoff(ctx.clock);
  const ownNetwork = new OwnNetwork(ctx.clock, ctx.config.http.own_networks);
  // A box set up with the single status-page password: its holder becomes the manager `manager`.
  if (tx(ctx.db, () => adoptSinglePassword(ctx.db, isoTime(ctx.clock.now())))) ctx.log.info('the status page password is now the manager named manager');

  /**
   * Who is logging in: the name given, or, when the form leaves it empty and the box has a single
   * manager, that manager (a box with one manager keeps its one-field login).
   */
  const loginManager = (name: string | undefined): ManagerRow | undefined => {
    if (name?.trim()) return managerByName(ctx.db, name);
    const all = listManagers(ctx.db);
    return all.length === 1 ? managerByName(ctx.db, all[0].name) : undefined;
  };

  /**
   * What a known-device cookie is signed with: every manager's password hash, so a device stays known
   * until a manager is added, removed or changes password (null while the box has no manager).
   */
  const deviceSecret = (): string | null => {
    const all = listManagers(ctx.db);
    return all.length ? all.map((m) => managerByName(ctx.db, m.name)?.password_hash ?? '').join('|') : null;
  };

  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    parseForms(scope);

    const showLogin = async (_req: FastifyRequest, reply: FastifyReply, status: number, error?: string) => {
      const { loginPage } = await page();
      const token = newLoginToken();
      reply.header('set-cookie', cookie(ctx, LOGIN_COOKIE, token, 3600));
      return sendHtml(reply, status, loginPage({ loginToken: token, error, configured: managerCount(ctx.db) > 0, dataDir: ctx.config.data_dir }));
    };

    scope.get('/ops.css', { schema: { hide: true } }, async (_req, reply) =>
      reply
        .header('content-type', 'text/css; charset=utf-8')
        .header('cache-control', 'max-age=300')
        .send((await page()).CSS),
    );

    const Query = Type.Object(
      {
        notice: Type.Optional(Type.String({ maxLength: 200 })),
        sandbox: Type.Optional(Type.Union([Type.Literal('1'), Type.Literal('0')])),
        // A central's stores panel: its filter and page.
        stores_state: Type.Optional(Type.Union([Type.Literal(''), ...STORE_STATES.map((st) => Type.Literal(st))])),
        stores_find: Type.Optional(Type.String({ maxLength: 100 })),
        stores_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
      },
      { additionalProperties: false },
    );
    scope.get('/', { schema: { hide: true, querystring: Query, response: Html } }, async (req, reply) => {
      const session = currentSession(ctx, req);
      if (!session) return showLogin(req, reply, 200);
      const q = req.query;
      const stores = { state: q.stores_state || undefined, text: q.stores_find || undefined, page: q.stores_page };
      const view = statusView(ctx, { sandbox: q.sandbox === '1', stores });
      const extra = await outageSections(ctx, session.csrf);
      return sendHtml(
        reply,
        200,
        (await page()).statusPage(view, session.csrf, req.query.notice, {
          ...extra,
          first: view.stores ? (await import('./stores-panel.js')).storesPanel(view, stores) : '',
          panels: heldPanel(ctx, session.csrf) + extra.panels + accountFormatsPanel(ctx),
          manager: session.manager_name,
        }),
      );
    });

    scope.get('/login', { schema: { hide: true, response: Html } }, async (_req, reply) => seeOther(reply, '/'));

    // Every login is answered (issue 32): a known device (a browser that logged in before, its
    // cookie signed with the password) or the box's own network passes the global lock and the
    // line; everyone else gets 401, then 429 with Retry-After per address, per device and overall.
    scope.post('/login', { schema: { hide: true, body: FormBody, response: Html } }, async (req, reply) => {
      const device = knownDevice(deviceSecret(), parseCookies(req.headers.cookie)[DEVICE_COOKIE]);
      const key = device ? `device:${device}` : `ip:${req.ip}`;
      const refuse = (seconds: number, why: string) => showLogin(req, reply.header('retry-after', String(seconds)), 429, `${why}; wait ${seconds} seconds.`);
      const wait = failures.wait(key);
      if (wait) return refuse(wait, 'Too many attempts');
      const trusted = device !== null || ownNetwork.has(req.ip);
      const locked = trusted ? 0 : everyone.wait();
      if (locked) return refuse(locked, 'Too many failed logins');
      if (!sameToken(req.body._csrf, parseCookies(req.headers.cookie)[LOGIN_COOKIE])) {
        return showLogin(req, reply, 403, 'The form expired; please try again.');
      }
      const manager = loginManager(req.body.name);
      const password = req.body.password;
      const ok = manager && password ? await checks.run(() => verifyPassword(password, manager.password_hash), trusted) : false;
      if (ok === null) return refuse(1, 'Too many logins at once');
      if (!ok || !manager || !password) {
        ctx.log.warn({ ip: req.ip, known_device: device !== null }, 'manager login failed');
        failures.failed(key);
        if (!trusted) everyone.failed();
        // The same answer for an unknown name and a wrong password: the form says nothing of who exists.
        return showLogin(req, reply, 401, 'Wrong name or password.');
      }
      if (needsRehash(manager.password_hash)) {
        const hash = await hashPassword(password);
        tx(ctx.db, () => setManagerPasswordOf(ctx.db, manager.id, hash));
      }
      ctx.log.info({ ip: req.ip, manager: manager.name, known_device: device !== null }, 'manager logged in');
      startSession(ctx, reply, manager.id);
      const secret = deviceSecret();
      if (secret)
        reply.header(
          'set-cookie',
          cookie(ctx, DEVICE_COOKIE, device ? parseCookies(req.headers.cookie)[DEVICE_COOKIE] : newDeviceToken(secret), DEVICE_COOKIE_DAYS * 86_400),
        );
      return seeOther(reply, '/');
    });

    /** A POST from the page: a session and its CSRF token, or nothing happens. */
    const guard = (req: FastifyRequest, reply: FastifyReply) => {
      const session = currentSession(ctx, req);
      if (!session) return { denied: seeOther(reply, '/') };
      if (!sameToken((req.body as { _csrf?: string } | undefined)?._csrf, session.csrf))
        return { denied: sendHtml(reply, 403, 'Forbidden: the form is stale; reload the page.') };
      return { session };
    };

    outageRoutes(scope, ctx, guard);
    heldRoutes(scope, ctx, guard);

    scope.post('/logout', { schema: { hide: true, body: FormBody, response: Html } }, async (req, reply) => {
      const g = guard(req, reply);
      if (g.denied) return g.denied;
      endSession(ctx, req, reply);
      return seeOther(reply, '/');
    });

    scope.post(
      '/ops/deliveries/:id/resend',
      { schema: { hide: true, params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }), body: FormBody, response: Html } },
      async (req, reply) => {
        const g = guard(req, reply);
        if (g.denied) return g.denied;
        const resend = statusSources(ctx).resendDelivery;
        if (!resend) return seeOther(reply, `/?notice=${encodeURIComponent('Webhooks are not configured on this box.')}`);
        let notice: string;
        try {
          const r = await resend(req.params.id);
          notice = r.message;
        } catch (err) {
          notice = `Resend failed: ${(err as Error).message}`;
        }
        ctx.log.info({ delivery_id: req.params.id, notice }, 'manager resent a delivery');
        return seeOther(reply, `/?notice=${encodeURIComponent(notice)}`);
      },
    );

    scope.post(
      '/ops/endpoints/:id/replay',
      {
        schema: {
          hide: true,
          params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
          body: Type.Object({ ...FormBody.properties, since: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: true }),
          response: Html,
        },
      },
      async (req, reply) => {
        const g = guard(req, reply);
        if (g.denied) return g.denied;
        const replay = statusSources(ctx).replayFailures;
        if (!replay) return seeOther(reply, `/?notice=${encodeURIComponent('Webhooks are not configured on this box.')}`);
        const since = Date.parse(req.body.since ?? '');
        let notice: string;
        if (Number.isNaN(since)) notice = `Replay: "${req.body.since ?? ''}" is not a time (e.g. 2026-01-01T08:00:00Z).`;
        else {
          try {
            notice = (await replay(req.params.id, new Date(since).toISOString())).message;
          } catch (err) {
            notice = `Replay failed: ${(err as Error).message}`;
          }
        }
        ctx.log.info({ endpoint_id: req.params.id, since: req.body.since, notice }, 'manager replayed failed deliveries');
        return seeOther(reply, `/?notice=${encodeURIComponent(notice)}`);
      },
    );

    const registry = metrics(ctx).registry;
    scope.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
      const token = ctx.config.ops.metrics_token;
      if (token && !sameToken(req.headers.authorization, `Bearer ${token}`)) {
        return reply.code(401).header('www-authenticate', 'Bearer').send({ message: 'Send Authorization: Bearer <ops.metrics_token>.', code: 'missing_key' });
      }
      return reply.header('content-type', registry.contentType).send(await registry.metrics());
    });
  });
}
