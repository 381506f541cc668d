import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { pageOf, PageQuery, setPageHeaders } from '../../api/pagination.js';
import { errorBodies, IdParams } from '../../api/schemas.js';
import { sendCommitted } from '../../api/idempotency.js';
import { ApiError, invalid, notFound } from '../../errors.js';
import { findTerminal } from '../terminals/service.js';
import {
  allowOfflineUntil,
  getStoredPayment,
  listOfflineAudit,
  listStoredPayments,
  offlinePolicies,
  revokeOfflineOverrides,
  setAccountCaps,
  setTerminalCaps,
} from '../terminals/stored/service.js';
import {
  AccountCapsBody,
  ListStoredQuery,
  OfflineAuditSchema,
  OfflinePolicySchema,
  OverrideBody,
  RevokeBody,
  StoredPaymentSchema,
  TerminalCapsBody,
} from '../terminals/stored/schema.js';
import { requireManager } from './manager-auth.js';
import { centralSalesToCollect, outageNow, outageReports, salesToCollect } from './outage.js';
import { OutageReportsQuery, OutageReportsSchema } from './outage-schema.js';
import { storeSide } from '../../sync/store/sync-store.js';
import { STATE } from '../../sync/shared/state.js';

const errors = errorBodies(400, 401, 403, 404, 409, 422, 429);
const tags = ['offline payments'];
const TerminalParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

/**
 * Stored (offline) card payments through the API (docs/stored-payments.md "Through the API"): what
 * the status page and `posd payments offline` show, under the usual key rules (organization keys
 * read only), and the policy's changes, which take a named manager's credential besides the key
 * and are audited under that manager's name. A central answers the reads from what its stores
 * reported and refuses the changes (each store changes its own policy).
 */
export function offlineApiRoutes(app: ApiApp, ctx: AppContext): void {
  const central = ctx.config.role === 'central';
  /** The acting account and the manager who changes its policy, before anything is written. */
  const changer = (req: FastifyRequest) => {
    if (central) throw new ApiError('offline_policy_at_store');
    const account = requireAccount(req);
    return { account, actor: requireManager(ctx, req) };
  };
  const terminalOf = (req: FastifyRequest, id: string) => {
    const t = findTerminal(ctx, readScope(req), id);
    if (!t) throw notFound('terminal', id);
    return t;
  };
  // Terminals learn a new policy within seconds (the bridge re-reads it); telling them now saves the wait.
  const tellTerminals = async (accountId: string) => {
    try {
      (await import('../terminals/link/index.js')).bridgeOf(ctx).refreshPolicies(accountId);
    } catch (err) {
      ctx.log.warn({ err: (err as Error).message }, 'could not send the new offline policy now; terminals get it within seconds');
    }
  };

  app.get(
    '/offline_policy',
    {
      schema: {
        tags,
        summary: 'The offline policy of each account read: caps, override, what may be stored now',
        response: { 200: Type.Array(OfflinePolicySchema), ...errors },
      },
    },
    async (req) => offlinePolicies(ctx, readScope(req)),
  );

  app.patch(
    '/offline_policy',
    {
      schema: {
        tags,
        summary: "Set the account's standing caps (a named manager's credential; audited)",
        body: AccountCapsBody,
        response: { 200: OfflinePolicySchema, ...errors },
      },
    },
    async (req, reply) => {
      const { account, actor } = changer(req);
      const { reason, ...caps } = req.body;
      const r = await sendCommitted(ctx.db, req, reply, 200, () => {
        setAccountCaps(ctx, account, caps, { actor, reason });
        return offlinePolicies(ctx, { accountIds: [account.id], liveMode: account.live_mode })[0];
      });
      await tellTerminals(account.id);
      return r;
    },
  );

  app.get(
    '/terminals/:id/offline_policy',
    {
      schema: {
        tags,
        summary: "One terminal's offline policy: its own caps beside its account's",
        params: TerminalParams,
        response: { 200: OfflinePolicySchema, ...errors },
      },
    },
    async (req) => {
      const t = central ? null : terminalOf(req, req.params.id);
      const scope = t ? { accountIds: [t.account_id], liveMode: t.live_mode === 1 } : readScope(req);
      const [view] = offlinePolicies(ctx, scope, req.params.id).filter((v) => !central || (v.reported?.length ?? 0) > 0);
      if (!view) throw notFound('terminal', req.params.id);
      return view;
    },
  );

  app.patch(
    '/terminals/:id/offline_policy',
    {
      schema: {
        tags,
        summary: "Set a terminal's own caps, beside its account's (null clears one; a named manager's credential; audited)",
        params: TerminalParams,
        body: TerminalCapsBody,
        response: { 200: OfflinePolicySchema, ...errors },
      },
    },
    async (req, reply) => {
      const { account, actor } = changer(req);
      const t = findTerminal(ctx, { accountIds: [account.id], liveMode: account.live_mode }, req.params.id);
      if (!t) throw notFound('terminal', req.params.id);
      const { reason, ...caps } = req.body;
      const r = await sendCommitted(ctx.db, req, reply, 200, () => {
        setTerminalCaps(ctx, account, t.id, caps, { actor, reason });
        return offlinePolicies(ctx, { accountIds: [account.id], liveMode: account.live_mode }, t.id)[0];
      });
      await tellTerminals(account.id);
      return r;
    },
  );

  app.post(
    '/offline_policy/override',
    {
      schema: {
        tags,
        summary: 'A manager forces stored payments on (and raises the caps given) until a time, at most 7 days ahead (audited)',
        body: OverrideBody,
        response: { 201: OfflinePolicySchema, ...errors },
      },
    },
    async (req, reply) => {
      const { account, actor } = changer(req);
      const { reason, until, ...raised } = req.body;
      if (!Number.isFinite(Date.parse(until))) throw invalid({ until: 'must be an ISO 8601 date-time' });
      const r = await sendCommitted(ctx.db, req, reply, 201, () => {
        allowOfflineUntil(ctx, account, until, raised, { actor, reason });
        return offlinePolicies(ctx, { accountIds: [account.id], liveMode: account.live_mode })[0];
      });
      await tellTerminals(account.id);
      return r;
    },
  );

  app.post(
    '/offline_policy/override/revoke',
    { schema: { tags, summary: 'End the override in force (audited); 404 when none is', body: RevokeBody, response: { 200: OfflinePolicySchema, ...errors } } },
    async (req, reply) => {
      const { account, actor } = changer(req);
      const r = await sendCommitted(ctx.db, req, reply, 200, () => {
        if (revokeOfflineOverrides(ctx, account, { actor, reason: req.body.reason }) === 0) {
          throw new ApiError('not_found', { message: 'No override is in force for this account.' });
        }
        return offlinePolicies(ctx, { accountIds: [account.id], liveMode: account.live_mode })[0];
      });
      await tellTerminals(account.id);
      return r;
    },
  );

  app.get(
    '/offline_audit',
    {
      schema: {
        tags,
        summary: 'Every change of the offline policy: who, when, why, caps before and after',
        querystring: Type.Object(PageQuery),
        response: { 200: Type.Array(OfflineAuditSchema), ...errors },
      },
    },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { rows, total } = listOfflineAudit(ctx, readScope(req), page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get(
    '/stored_payments',
    {
      schema: {
        tags,
        summary: 'Card payments terminals stored offline, newest first (filter by status, terminal)',
        querystring: ListStoredQuery,
        response: { 200: Type.Array(StoredPaymentSchema), ...errors },
      },
    },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { status, terminal_id } = req.query;
      const { rows, total } = listStoredPayments(ctx, readScope(req), { status, terminal_id }, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get(
    '/stored_payments/:id',
    { schema: { tags, summary: 'One stored payment', params: IdParams, response: { 200: StoredPaymentSchema, ...errors } } },
    async (req) => getStoredPayment(ctx, readScope(req), req.params.id),
  );

  app.get(
    '/to_collect',
    {
      schema: {
        tags,
        summary: 'Sales whose stored card was declined or expired later and are still owed (all=true: also those paid since)',
        querystring: Type.Object({ all: Type.Optional(Type.Boolean()) }),
        response: { 200: Type.Array(Type.Record(Type.String(), Type.Unknown())), ...errors },
      },
    },
    async (req) => {
      const { accountIds, liveMode } = readScope(req);
      const owedOnly = req.query.all !== true;
      if (central) return centralSalesToCollect(ctx, { accountIds, liveMode }, { owedOnly }) as unknown as Array<Record<string, unknown>>;
      return accountIds.flatMap((id) => salesToCollect(ctx, { id, live_mode: liveMode }, { owedOnly })) as unknown as Array<Record<string, unknown>>;
    },
  );

  app.get(
    '/outage_reports',
    {
      schema: {
        tags,
        summary: "Outages and their recovery checklist (posd outage report), for the accounts read; at a central, across the stores' reported windows",
        querystring: OutageReportsQuery,
        response: { 200: OutageReportsSchema, ...errors },
      },
    },
    async (req) => {
      const scope = readScope(req);
      const limit = req.query.limit ?? 5;
      if (central) {
        const { centralOfflineNow, centralOutageReports } = await import('./outage-central.js');
        return {
          offline_now: centralOfflineNow(ctx, scope),
          outages: centralOutageReports(ctx, scope, { storeId: req.query.store_id, from: req.query.since, limit }),
        };
      }
      // A box has its own outages only: another store's id finds none.
      const own = req.query.store_id === undefined || req.query.store_id === storeSide(ctx.db).state(STATE.storeId);
      return { offline_now: outageNow(ctx), outages: own ? outageReports(ctx, { from: req.query.since, limit, only: scope }) : [] };
    },
  );
}
