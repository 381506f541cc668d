import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { ApiError } from '../../errors.js';
import { seeOther } from '../../api/html.js';
import { accountsOf } from '../../accounts/service.js';
import { allowOfflineUntil, revokeOfflineOverrides } from '../terminals/stored/service.js';
import { offlineAccounts, outageNow, outageReports } from './outage.js';
import { localText } from './time.js';

/** The outage banner (above the panels) and the outage panels (among them), for GET /. Markup loaded on first view. */
export async function outageSections(ctx: AppContext, csrf: string): Promise<{ top: string; panels: string }> {
  const html = await import('./outage-panel.js');
  return {
    top: html.outageBanner(outageNow(ctx), ctx.clock.now()),
    panels: html.offlinePaymentsPanel(offlineAccounts(ctx), csrf, ctx.clock.now()) + html.outagesPanel(outageReports(ctx, { limit: 5 }), ctx.clock.now()),
  };
}

const Form = {
  _csrf: Type.Optional(Type.String({ maxLength: 200 })),
  account: Type.String({ minLength: 1, maxLength: 100 }),
  reason: Type.String({ maxLength: 500 }),
};
const AllowBody = Type.Object({ ...Form, until: Type.String({ maxLength: 40 }) }, { additionalProperties: true });
const RevokeBody = Type.Object(Form, { additionalProperties: true });
const Html = { 200: Type.String(), 303: Type.String(), 400: Type.String(), 403: Type.String() };

/** The page's POST guard: a manager's session (whose name the audit takes) and its CSRF token, or a refusal. */
type Guard = (
  req: FastifyRequest,
  reply: FastifyReply,
) => { denied: FastifyReply; session?: undefined } | { denied?: undefined; session: { manager_name: string } };

/**
 * `2026-05-01T20:00` from the form's datetime-local field is the box's local time (the store's
 * clock on the wall); a full ISO time with its zone is taken as written.
 */
export function untilFromForm(value: string): string | null {
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(value) ? new Date(value).getTime() : Date.parse(value);
  return Number.isFinite(ms) ? isoTime(ms) : null;
}

// The page takes a notice of at most 200 characters (a long account name must not make it a 400).
const back = (reply: FastifyReply, notice: string) =>
  seeOther(reply, `/?notice=${encodeURIComponent(notice.length > 200 ? `${notice.slice(0, 199)}…` : notice)}`);

function failure(err: unknown): string {
  if (err instanceof ApiError) {
    const detail = err.errors ? Object.values(err.errors).flat().join('; ') : '';
    return `Not changed: ${detail || err.message}`;
  }
  throw err;
}

/** The override button and its end, the same service as `posd payments offline allow|revoke`, audited. */
export function outageRoutes(app: FastifyInstance, ctx: AppContext, guard: Guard): void {
  const scope = app.withTypeProvider<TypeBoxTypeProvider>();
  const accountOrNull = (id: string) => accountsOf(ctx).account(id) ?? null;
  // Terminals re-read the policy every few seconds anyway; telling them now saves the wait.
  const tellTerminals = async (accountId: string) => {
    try {
      (await import('../terminals/link/index.js')).bridgeOf(ctx).refreshPolicies(accountId);
    } catch (err) {
      ctx.log.warn({ err: (err as Error).message }, 'could not send the new offline policy now; terminals get it within seconds');
    }
  };

  scope.post('/ops/offline/allow', { schema: { hide: true, body: AllowBody, response: Html } }, async (req, reply) => {
    const g = guard(req, reply);
    if (g.denied) return g.denied;
    const account = accountOrNull(req.body.account);
    if (!account) return back(reply, `Not changed: no account ${req.body.account}.`);
    const until = untilFromForm(req.body.until);
    if (!until) return back(reply, 'Not changed: the end of the override is not a date and time.');
    let notice: string;
    try {
      const r = tx(ctx.db, () => allowOfflineUntil(ctx, account, until, {}, { actor: g.session.manager_name, reason: req.body.reason }));
      notice = `Offline card payments allowed for ${account.name} until ${localText(r.until, ctx.clock.now())}.`;
      ctx.log.info(
        { account_id: account.id, until: r.until, reason: req.body.reason, manager: g.session.manager_name },
        'manager allowed offline card payments from the status page',
      );
      await tellTerminals(account.id);
    } catch (err) {
      notice = failure(err);
    }
    return back(reply, notice);
  });

  scope.post('/ops/offline/revoke', { schema: { hide: true, body: RevokeBody, response: Html } }, async (req, reply) => {
    const g = guard(req, reply);
    if (g.denied) return g.denied;
    const account = accountOrNull(req.body.account);
    if (!account) return back(reply, `Not changed: no account ${req.body.account}.`);
    let notice: string;
    try {
      const n = tx(ctx.db, () => revokeOfflineOverrides(ctx, account, { actor: g.session.manager_name, reason: req.body.reason }));
      notice = n ? `Override ended for ${account.name}.` : `No override was in force for ${account.name}.`;
      ctx.log.info({ account_id: account.id, ended: n, manager: g.session.manager_name }, 'manager ended the offline override from the status page');
      if (n) await tellTerminals(account.id);
    } catch (err) {
      notice = failure(err);
    }
    return back(reply, notice);
  });
}
